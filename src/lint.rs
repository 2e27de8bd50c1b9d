//! lint: twin drift. A partial index one scope requires and its unfiltered twin must stay twins:
//! same table, same access method, same key columns in the same order and direction (or every
//! key mirrored: a backward scan), the twin without a predicate, both valid and ready. The twin is the full index another scope of the
//! same read path requires on the same table, unless a scope names it (`twin = "name"`) or says
//! it has none on purpose (`twin = false`). Pure: the catalog facts come in, findings go out.

use serde::{Deserialize, Serialize};

pub use crate::model::IndexInfo;

pub use crate::model::ReadPathIndexes;

pub use crate::model::TwinDecl;

/// What kind of problem a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A required index does not exist (the check's `missing-index` says so too).
    Missing,
    /// A required index, or a named twin, is not valid or not ready.
    Invalid,
    /// A partial index and its twin drifted apart (or the named twin does not exist).
    TwinDrift,
    /// A partial index and its twin whose keys differ in direction only, which the catalog alone
    /// cannot call drift: with the keys before it compared by equality, `(a, b)` and `(a, b
    /// DESC)` serve the same ORDER BY (one scanned backwards). `check` settles it from the read
    /// path's plans ([`settle_directions`]); until then it is said and fails nothing.
    KeyDirection,
    /// The catalog could not be read for the read path (another session's lock).
    Unchecked,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    /// The first read path the finding is about (of [`Finding::read_paths`]).
    pub read_path: String,
    /// Every read path the finding is about, in the project's order: a pair that drifted, or an
    /// invalid index, is one finding however many read paths require it ([`merged`]). Empty in
    /// a run saved before it was kept: then `read_path` alone.
    #[serde(default)]
    pub read_paths: Vec<String>,
    /// The partial index, or the index the finding is about.
    pub index: String,
    /// Its twin, when the finding is about a pair.
    pub twin: Option<String>,
    pub problem: String,
    /// The definitions involved, side by side.
    pub definitions: Vec<String>,
}

impl Finding {
    /// Every read path the finding is about.
    pub fn read_paths(&self) -> Vec<&str> {
        if self.read_paths.is_empty() {
            vec![self.read_path.as_str()]
        } else {
            self.read_paths.iter().map(String::as_str).collect()
        }
    }

    /// Whether the finding fails a run: every kind but a key-direction difference no plan has
    /// settled.
    pub fn fails(&self) -> bool {
        self.kind != Kind::KeyDirection
    }
}

/// Lints every read path: each required index (and each named twin) valid and ready, and each
/// partial index with its twin.
pub fn lint(read_paths: &[ReadPathIndexes]) -> Vec<Finding> {
    let mut out = Vec::new();
    for rp in read_paths {
        if let Some(why) = &rp.unchecked {
            out.push(Finding {
                kind: Kind::Unchecked,
                read_path: rp.read_path.clone(),
                read_paths: vec![rp.read_path.clone()],
                index: rp
                    .required
                    .first()
                    .map(|(_, i, _)| i.clone())
                    .unwrap_or_default(),
                twin: None,
                problem: why.clone(),
                definitions: vec![],
            });
            continue;
        }
        health(rp, &mut out);
        Pairs::new(rp).lint(&mut out);
    }
    merged(out)
}

/// The findings with those that say the same of the same indexes (every field but the read
/// path) made one, listing each read path it is about: two read paths that require the same
/// pair of twins see one drift, not two. In the order each was first found.
pub fn merged(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in findings {
        let same = |o: &&mut Finding| {
            (o.kind, &o.index, &o.twin, &o.problem, &o.definitions)
                == (f.kind, &f.index, &f.twin, &f.problem, &f.definitions)
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(o) => {
                let mut paths: Vec<String> = o.read_paths().into_iter().map(String::from).collect();
                for rp in f.read_paths() {
                    if !paths.iter().any(|p| p == rp) {
                        paths.push(rp.to_string());
                    }
                }
                o.read_paths = paths;
            }
            None => {
                let mut f = f;
                f.read_paths = f.read_paths().into_iter().map(String::from).collect();
                out.push(f);
            }
        }
    }
    out
}

/// A finding about several read paths as one finding per read path, for what is settled read
/// path by read path ([`settle_directions`]).
fn per_read_path(f: Finding) -> Vec<Finding> {
    f.read_paths()
        .into_iter()
        .map(|rp| Finding {
            read_path: rp.to_string(),
            read_paths: vec![rp.to_string()],
            ..f.clone()
        })
        .collect()
}

/// Missing and invalid indexes, each once however many scopes require it.
fn health(rp: &ReadPathIndexes, out: &mut Vec<Finding>) {
    let mut seen: Vec<&str> = Vec::new();
    for (scope, wanted, info) in &rp.required {
        if seen.contains(&wanted.as_str()) {
            continue;
        }
        seen.push(wanted);
        match info {
            None => out.push(Finding {
                kind: Kind::Missing,
                read_path: rp.read_path.clone(),
                read_paths: vec![rp.read_path.clone()],
                index: wanted.clone(),
                twin: None,
                problem: format!("index {wanted} (required in scope `{scope}`) does not exist"),
                definitions: vec![],
            }),
            Some(i) => invalid(rp, i, out),
        }
    }
    // A named twin no scope requires is checked too: an invalid twin serves no one.
    let required: Vec<&IndexInfo> = rp
        .required
        .iter()
        .filter_map(|(_, _, i)| i.as_ref())
        .collect();
    let mut twins: Vec<&IndexInfo> = Vec::new();
    for t in rp.named_twins.iter().filter_map(|(_, i)| i.as_ref()) {
        if !required.iter().chain(&twins).any(|r| same_index(r, t)) {
            invalid(rp, t, out);
            twins.push(t);
        }
    }
}

fn invalid(rp: &ReadPathIndexes, i: &IndexInfo, out: &mut Vec<Finding>) {
    if i.valid && i.ready {
        return;
    }
    out.push(Finding {
        kind: Kind::Invalid,
        read_path: rp.read_path.clone(),
        read_paths: vec![rp.read_path.clone()],
        index: i.name.clone(),
        twin: None,
        problem: format!(
            "index {} is {} (a failed or unfinished CREATE INDEX CONCURRENTLY?): \
             the planner will not use it",
            i.name,
            match (i.valid, i.ready) {
                (false, false) => "neither valid nor ready",
                (false, true) => "not valid",
                _ => "not ready",
            }
        ),
        definitions: vec![i.definition.clone()],
    });
}

fn same_index(a: &IndexInfo, b: &IndexInfo) -> bool {
    a.schema == b.schema && a.name == b.name
}

/// Whether `written` (as an expectation writes an index: `name` or `schema.name`) names `i`.
fn names(written: &str, i: &IndexInfo) -> bool {
    written == i.name || written == format!("{}.{}", i.schema, i.name)
}

/// What a named twin resolved to.
enum Resolved<'a> {
    Found(&'a IndexInfo),
    /// A scope requires it and it is missing: the `missing` finding already says so.
    MissingRequired,
    /// The caller looked it up and the catalog has no such index.
    Missing,
    /// The caller did not look it up (not in `required`, not in `named_twins`).
    NotLookedUp,
}

/// The pairing of one read path: which pairs to compare, each compared once.
struct Pairs<'a> {
    rp: &'a ReadPathIndexes,
    /// The pairs already compared, as sorted `(schema.name, schema.name)`: a drift is one
    /// finding whichever scope comes first and whichever side names the other.
    done: Vec<(String, String)>,
}

impl<'a> Pairs<'a> {
    fn new(rp: &'a ReadPathIndexes) -> Self {
        Pairs { rp, done: vec![] }
    }

    fn declared(&self, scope: &str) -> Option<&'a TwinDecl> {
        self.rp
            .twins
            .iter()
            .find(|(s, _)| s == scope)
            .map(|(_, d)| d)
    }

    fn lint(&mut self, out: &mut Vec<Finding>) {
        let rp = self.rp;
        for (scope, _, info) in &rp.required {
            // Missing: the `missing` finding says so; there is nothing to compare.
            let Some(index) = info else { continue };
            match self.declared(scope) {
                Some(TwinDecl::NoneOnPurpose) => {}
                Some(TwinDecl::Named(name)) => self.named(scope, index, name, out),
                // The guess: a partial index is paired with each full index another scope of
                // the same read path requires on the same table (a primary key or a unique
                // index like any other). Two partial indexes are not twins of each other: each
                // serves its own rows, and neither is the fallback for every row.
                None if index.predicate.is_some() => {
                    for (other, _, twin) in &rp.required {
                        let Some(twin) = twin else { continue };
                        if other != scope
                            && twin.predicate.is_none()
                            && twin.schema == index.schema
                            && twin.table == index.table
                            && self.declared(other) != Some(&TwinDecl::NoneOnPurpose)
                        {
                            self.compare(index, twin, out);
                        }
                    }
                }
                None => {}
            }
        }
    }

    fn resolve(&self, name: &str) -> Resolved<'a> {
        let rp = self.rp;
        let required = rp
            .required
            .iter()
            .find(|(_, w, i)| w == name || i.as_ref().is_some_and(|i| names(name, i)));
        if let Some((_, _, info)) = required {
            return info
                .as_ref()
                .map_or(Resolved::MissingRequired, Resolved::Found);
        }
        match rp.named_twins.iter().find(|(w, _)| w == name) {
            Some((_, Some(i))) => Resolved::Found(i),
            Some((_, None)) => Resolved::Missing,
            None => Resolved::NotLookedUp,
        }
    }

    /// `scope` requires `index` and names `name` as its twin.
    fn named(&mut self, scope: &str, index: &'a IndexInfo, name: &str, out: &mut Vec<Finding>) {
        let twin = match self.resolve(name) {
            Resolved::Found(twin) => twin,
            Resolved::MissingRequired => return,
            unresolved => {
                if self.first_time(&qualified(index), name) {
                    out.push(self.finding(
                        index.name.clone(),
                        name.to_owned(),
                        format!(
                            "the twin {name} that scope `{scope}` names for {} {}",
                            index.name,
                            if matches!(unresolved, Resolved::Missing) {
                                "does not exist"
                            } else {
                                "was not looked up in the catalog: not settled"
                            }
                        ),
                        vec![index.definition.clone()],
                    ));
                }
                return;
            }
        };
        if same_index(index, twin) {
            if self.first_time(&qualified(index), &qualified(twin)) {
                out.push(self.finding(
                    index.name.clone(),
                    twin.name.clone(),
                    format!("scope `{scope}` names {} as the twin of itself", index.name),
                    vec![index.definition.clone()],
                ));
            }
            return;
        }
        match (&index.predicate, &twin.predicate) {
            (Some(_), None) => self.compare(index, twin, out),
            (None, Some(_)) => self.compare(twin, index, out),
            (Some(_), Some(predicate)) => {
                if self.first_time(&qualified(index), &qualified(twin)) {
                    out.push(self.finding(
                        index.name.clone(),
                        twin.name.clone(),
                        format!(
                            "the twin {} of {} has a predicate {predicate}: it must have none \
                             to serve every row",
                            twin.name, index.name
                        ),
                        vec![index.definition.clone(), twin.definition.clone()],
                    ));
                }
            }
            (None, None) => {
                if self.first_time(&qualified(index), &qualified(twin)) {
                    out.push(self.finding(
                        index.name.clone(),
                        twin.name.clone(),
                        format!(
                            "scope `{scope}` names {} as the twin of {}, but neither has a \
                             predicate: a twin pairs a partial index with a full one",
                            twin.name, index.name
                        ),
                        vec![index.definition.clone(), twin.definition.clone()],
                    ));
                }
            }
        }
    }

    /// Compares a partial index with its unfiltered twin, once per pair.
    fn compare(&mut self, partial: &IndexInfo, twin: &IndexInfo, out: &mut Vec<Finding>) {
        if !self.first_time(&qualified(partial), &qualified(twin)) {
            return;
        }
        let mut problems = Vec::new();
        if (&twin.schema, &twin.table) != (&partial.schema, &partial.table) {
            problems.push(format!(
                "on different tables ({}.{} and {}.{})",
                partial.schema, partial.table, twin.schema, twin.table
            ));
        }
        if twin.method != partial.method {
            problems.push(format!(
                "access methods differ ({} and {})",
                partial.method, twin.method
            ));
        }
        let direction_only = problems.is_empty() && directions_only(partial, twin);
        if let Some(p) = key_drift(partial, twin) {
            problems.push(p);
        }
        if direction_only {
            let mut f = self.finding(
                partial.name.clone(),
                twin.name.clone(),
                format!(
                    "{} and its twin {} differ in key direction only: {}; not settled from the \
                     catalog (with the keys before it compared by equality, both serve the same \
                     ORDER BY, one scanned backwards): `plancheck check` settles it from the \
                     read path's plans",
                    partial.name,
                    twin.name,
                    problems.join("; ")
                ),
                vec![partial.definition.clone(), twin.definition.clone()],
            );
            f.kind = Kind::KeyDirection;
            out.push(f);
        } else if !problems.is_empty() {
            out.push(self.finding(
                partial.name.clone(),
                twin.name.clone(),
                format!(
                    "{} and its twin {} drifted: {}",
                    partial.name,
                    twin.name,
                    problems.join("; ")
                ),
                vec![partial.definition.clone(), twin.definition.clone()],
            ));
        }
    }

    /// Records the pair `{a, b}`; false when it was recorded already.
    fn first_time(&mut self, a: &str, b: &str) -> bool {
        let key = if a <= b {
            (a.to_owned(), b.to_owned())
        } else {
            (b.to_owned(), a.to_owned())
        };
        if self.done.contains(&key) {
            return false;
        }
        self.done.push(key);
        true
    }

    fn finding(
        &self,
        index: String,
        twin: String,
        problem: String,
        definitions: Vec<String>,
    ) -> Finding {
        Finding {
            kind: Kind::TwinDrift,
            read_path: self.rp.read_path.clone(),
            read_paths: vec![self.rp.read_path.clone()],
            index,
            twin: Some(twin),
            problem,
            definitions,
        }
    }
}

fn qualified(i: &IndexInfo) -> String {
    format!("{}.{}", i.schema, i.name)
}

/// One key column's order (see [`crate::model::KeyOrder`]).
use crate::model::KeyOrder as Direction;

impl Direction {
    fn reversed(self) -> Self {
        Direction {
            desc: !self.desc,
            nulls_first: !self.nulls_first,
        }
    }

    /// The words `CREATE INDEX` needs for this order: nothing when ascending, nulls last.
    fn written(self) -> &'static str {
        match (self.desc, self.nulls_first) {
            (false, false) => "",
            (false, true) => " NULLS FIRST",
            (true, true) => " DESC",
            (true, false) => " DESC NULLS LAST",
        }
    }
}

/// An index's key columns with their directions. Saved data from before `orders` existed has
/// none (or too few): a key without an order is ascending, as `CREATE INDEX` defaults.
fn directed_keys(i: &IndexInfo) -> Vec<(&str, Direction)> {
    i.keys
        .iter()
        .enumerate()
        .map(|(n, k)| {
            let order = i.orders.get(n).map_or("", String::as_str);
            (k.as_str(), Direction::parse(order))
        })
        .collect()
}

fn written_keys(keys: &[(&str, Direction)]) -> String {
    keys.iter()
        .map(|(k, d)| format!("{k}{}", d.written()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn bare<'k>(keys: &[(&'k str, Direction)]) -> Vec<&'k str> {
    keys.iter().map(|(k, _)| *k).collect()
}

/// Whether the two indexes have the same key columns in the same order, differing in direction
/// (or NULLS order) only, and not every key mirrored.
fn directions_only(partial: &IndexInfo, twin: &IndexInfo) -> bool {
    let p = directed_keys(partial);
    let t = directed_keys(twin);
    let mirrored: Vec<(&str, Direction)> = t.iter().map(|&(k, d)| (k, d.reversed())).collect();
    p != t && p != mirrored && bare(&p) == bare(&t)
}

/// What one check's plan showed of its index, for [`settle_directions`].
#[derive(Debug, Clone)]
pub struct PlanFacts<'a> {
    pub read_path: &'a str,
    pub scope: &'a str,
    /// The index the check read (its required index, or the accepted one it passed with), when
    /// its measured plan read it: `None` when it did not.
    pub read: Option<&'a str>,
    /// The Sort Keys of the sorts in that plan.
    pub sort_keys: &'a [String],
    /// The plan is production's (`check --stats`), not the measured server's.
    pub at_production: bool,
}

/// What each judged check's plan showed of its index, for [`settle_directions`]: the index
/// the check read, when its verdict says the measured plan read it (a pass, or a verdict about
/// a plan through it: over budget, changed, a relation read whole beside it, its key unused, its
/// custom plan where the generic plan failed), and that plan's sorts.
pub fn plan_facts(checks: &[crate::verdict::CheckResult]) -> Vec<PlanFacts<'_>> {
    use crate::verdict::Verdict;
    checks
        .iter()
        .map(|c| {
            let read = matches!(
                c.verdict,
                Verdict::Pass
                    | Verdict::OverBudget
                    | Verdict::PlanChanged
                    | Verdict::SeqScan
                    | Verdict::KeyUnused
                    | Verdict::GenericPlan
            );
            // As written (`name` or `schema.name`): a finding names the index bare.
            let name = c
                .required_index
                .rsplit_once('.')
                .map_or(c.required_index.as_str(), |(_, n)| n);
            PlanFacts {
                read_path: &c.read_path,
                scope: &c.scope,
                read: (read && !name.is_empty()).then_some(name),
                sort_keys: &c.sort_keys,
                at_production: c.here.is_some(),
            }
        })
        .collect()
}

/// Settles each key-direction finding from the plans of its read path: when a check reads the
/// partial index and one reads the twin, and neither plan sorts (or both do), both serve the
/// page, and the finding goes; when exactly one sorts, it is twin drift, with the sort as its
/// evidence. A finding whose indexes no check read stays what it was: not settled.
pub fn settle_directions(findings: Vec<Finding>, plans: &[PlanFacts<'_>]) -> Vec<Finding> {
    let mut out = Vec::new();
    // Each read path's plans settle its own finding; those that then say the same are one again.
    for mut f in findings.into_iter().flat_map(per_read_path) {
        if f.kind != Kind::KeyDirection {
            out.push(f);
            continue;
        }
        let reading = |name: &str| {
            plans
                .iter()
                .find(|p| p.read_path == f.read_path && p.read == Some(name))
        };
        let (Some(a), Some(b)) = (reading(&f.index), f.twin.as_deref().and_then(reading)) else {
            out.push(f);
            continue;
        };
        let sorts = |p: &PlanFacts<'_>| !p.sort_keys.is_empty();
        if sorts(a) == sorts(b) {
            // Both serve the order (or neither does): the direction decides nothing here.
            continue;
        }
        let (sorting, index) = if sorts(a) {
            (a, f.index.clone())
        } else {
            (b, f.twin.clone().unwrap_or_default())
        };
        let keys = f
            .problem
            .split_once(": ")
            .and_then(|(_, rest)| rest.split_once("; not settled"))
            .map(|(keys, _)| keys.to_string())
            .unwrap_or_default();
        f.kind = Kind::TwinDrift;
        let at = if sorting.at_production {
            " at production's statistics"
        } else {
            ""
        };
        f.problem = format!(
            "{} and its twin {} drifted: {keys}: scope `{}`'s plan{at} through {index} sorts \
             (Sort Key: {}) where scope `{}`'s plan through the other needs no Sort",
            f.index,
            f.twin.clone().unwrap_or_default(),
            sorting.scope,
            sorting.sort_keys.join(", "),
            if sorts(a) { b.scope } else { a.scope }
        );
        out.push(f);
    }
    merged(out)
}

/// How the twin's keys drifted from the partial index's, if they did. Direction and NULLS
/// order are part of a key: they decide which ORDER BY an index scan returns without a sort.
/// A btree scanned backwards returns every key reversed, direction and NULLS order both
/// (ascending nulls last becomes descending nulls first), so a twin that mirrors the partial
/// index in every key serves the same ORDER BY with an Index Scan Backward: not drift. One key
/// flipped and not the others is drift: no scan direction serves both orders.
fn key_drift(partial: &IndexInfo, twin: &IndexInfo) -> Option<String> {
    let p = directed_keys(partial);
    let t = directed_keys(twin);
    let mirrored: Vec<(&str, Direction)> = t.iter().map(|&(k, d)| (k, d.reversed())).collect();
    if p == t || p == mirrored {
        return None;
    }
    let what = if bare(&p) == bare(&t) {
        "key directions differ"
    } else {
        let (mut a, mut b) = (bare(&p), bare(&t));
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            "key columns in a different order"
        } else {
            "key columns differ"
        }
    };
    Some(format!(
        "{what}: ({}) and ({})",
        written_keys(&p),
        written_keys(&t)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::lint_findings as render;

    fn index(name: &str, keys: &[&str], predicate: Option<&str>) -> IndexInfo {
        IndexInfo {
            schema: "public".into(),
            name: name.into(),
            table: "posts".into(),
            method: "btree".into(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            orders: keys.iter().map(|_| String::new()).collect(),
            predicate: predicate.map(str::to_owned),
            valid: true,
            ready: true,
            definition: format!("CREATE INDEX {name} ON public.posts ({})", keys.join(", ")),
        }
    }

    fn visible(name: &str, keys: &[&str]) -> IndexInfo {
        index(name, keys, Some("(visibility = 'visible')"))
    }

    fn with_orders(mut i: IndexInfo, orders: &[&str]) -> IndexInfo {
        i.orders = orders.iter().map(|o| o.to_string()).collect();
        i
    }

    /// A read path `thread-page` whose scopes require these indexes, in this order.
    fn read_path(required: Vec<(&str, IndexInfo)>) -> ReadPathIndexes {
        ReadPathIndexes {
            read_path: "thread-page".into(),
            required: required
                .into_iter()
                .map(|(s, i)| (s.to_owned(), i.name.clone(), Some(i)))
                .collect(),
            ..Default::default()
        }
    }

    fn declare(mut rp: ReadPathIndexes, scope: &str, decl: TwinDecl) -> ReadPathIndexes {
        rp.twins.push((scope.to_owned(), decl));
        rp
    }

    fn named(name: &str) -> TwinDecl {
        TwinDecl::Named(name.to_owned())
    }

    /// Lint finds nothing in the read path, or the test fails with what it found.
    fn clean(rp: ReadPathIndexes) {
        let f = lint(&[rp]);
        assert!(f.is_empty(), "expected no finding, got:\n{}", render(&f));
    }

    /// Lint finds exactly one problem in the read path, of this kind: the finding.
    fn one(rp: ReadPathIndexes, kind: Kind) -> Finding {
        let f = lint(&[rp]);
        assert_eq!(f.len(), 1, "expected one finding, got:\n{}", render(&f));
        assert_eq!(f[0].kind, kind, "{}", render(&f));
        f.into_iter().next().unwrap()
    }

    fn pair(partial: IndexInfo, twin: Option<IndexInfo>) -> Vec<Finding> {
        lint(&[ReadPathIndexes {
            read_path: "thread-page".into(),
            unchecked: None,
            required: vec![
                ("member".into(), partial.name.clone(), Some(partial)),
                ("moderator".into(), "posts_all".into(), twin),
            ],
            ..Default::default()
        }])
    }

    #[test]
    fn twins_with_the_same_keys_are_clean() {
        let f = pair(
            visible("posts_visible", &["thread_id", "created_at"]),
            Some(index("posts_all", &["thread_id", "created_at"], None)),
        );
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn key_order_drift_is_found_with_both_definitions() {
        let f = pair(
            visible("posts_visible", &["thread_id", "created_at"]),
            Some(index("posts_all", &["created_at", "thread_id"], None)),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            render(&f),
            "thread-page: posts_visible and its twin posts_all drifted: key columns in a \
             different order: (thread_id, created_at) and (created_at, thread_id)\n    \
             CREATE INDEX posts_visible ON public.posts (thread_id, created_at)\n    \
             CREATE INDEX posts_all ON public.posts (created_at, thread_id)\n"
        );
    }

    #[test]
    fn a_missing_twin_is_found() {
        let f = pair(visible("posts_visible", &["thread_id"]), None);
        assert_eq!(f.len(), 1);
        assert!(f[0].problem.contains("does not exist"), "{}", f[0].problem);
    }

    #[test]
    fn an_invalid_index_is_found() {
        let mut twin = index("posts_all", &["thread_id"], None);
        twin.valid = false;
        let f = pair(visible("posts_visible", &["thread_id"]), Some(twin));
        assert_eq!(f.len(), 1);
        assert!(f[0].problem.contains("not valid"), "{}", f[0].problem);
    }

    #[test]
    fn differing_methods_drift() {
        let mut twin = index("posts_all", &["thread_id"], None);
        twin.method = "hash".into();
        let f = pair(visible("posts_visible", &["thread_id"]), Some(twin));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].problem.contains("access methods differ"), "{f:?}");
    }

    // Regression: two partial indexes were paired as twins, the same drift reported twice.
    #[test]
    fn two_partial_indexes_required_by_two_scopes_are_not_twins() {
        clean(read_path(vec![
            ("member", visible("posts_visible", &["thread_id"])),
            (
                "guest",
                index("posts_public", &["thread_id"], Some("(NOT nsfw)")),
            ),
        ]));
        clean(read_path(vec![
            ("member", visible("posts_visible", &["thread_id"])),
            (
                "guest",
                index("posts_public", &["created_at"], Some("(NOT nsfw)")),
            ),
        ]));
    }

    // Regression: the real unfiltered twin (a primary key another scope requires) was ignored
    // while the two partial indexes were paired with each other.
    #[test]
    fn a_partial_index_pairs_with_the_primary_key_another_scope_requires() {
        let mut pkey = index("posts_pkey", &["id"], None);
        pkey.definition = "CREATE UNIQUE INDEX posts_pkey ON public.posts USING btree (id)".into();
        let f = lint(&[read_path(vec![
            ("member", visible("posts_visible", &["thread_id", "id"])),
            (
                "guest",
                index("posts_public", &["thread_id", "id"], Some("(NOT nsfw)")),
            ),
            ("moderator", pkey),
        ])]);
        let pairs: Vec<(&str, Option<&str>)> = f
            .iter()
            .map(|f| (f.index.as_str(), f.twin.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("posts_visible", Some("posts_pkey")),
                ("posts_public", Some("posts_pkey"))
            ],
            "{}",
            render(&f)
        );
        assert!(
            f.iter()
                .all(|f| f.kind == Kind::TwinDrift && f.problem.contains("key columns differ")),
            "{}",
            render(&f)
        );
    }

    #[test]
    fn a_drift_is_reported_once_whichever_scope_comes_first() {
        let partial = || visible("posts_visible", &["thread_id", "created_at"]);
        let full = || index("posts_all", &["created_at", "thread_id"], None);
        let partial_first = read_path(vec![("member", partial()), ("moderator", full())]);
        let full_first = read_path(vec![("moderator", full()), ("member", partial())]);
        let a = one(partial_first.clone(), Kind::TwinDrift);
        let b = one(full_first.clone(), Kind::TwinDrift);
        assert_eq!(a, b);
        assert_eq!(
            (a.index.as_str(), a.twin.as_deref()),
            ("posts_visible", Some("posts_all"))
        );
        // Named from either side, or both, as well as guessed: still once.
        for rp in [partial_first, full_first] {
            let both = declare(
                declare(rp.clone(), "member", named("posts_all")),
                "moderator",
                named("posts_visible"),
            );
            assert_eq!(one(both, Kind::TwinDrift), a);
            let from_full = declare(rp, "moderator", named("posts_visible"));
            assert_eq!(one(from_full, Kind::TwinDrift), a);
        }
        // Two scopes requiring the same partial index: one pair, one finding.
        one(
            read_path(vec![
                ("member", partial()),
                ("guest", partial()),
                ("moderator", full()),
            ]),
            Kind::TwinDrift,
        );
    }

    #[test]
    fn an_index_on_another_table_or_of_the_same_scope_is_not_guessed_a_twin() {
        let mut other_table = index("threads_all", &["created_at"], None);
        other_table.table = "threads".into();
        clean(read_path(vec![
            ("member", visible("posts_visible", &["thread_id"])),
            ("moderator", other_table),
        ]));
        clean(read_path(vec![
            ("member", visible("posts_visible", &["thread_id"])),
            ("member", index("posts_all", &["created_at"], None)),
        ]));
    }

    #[test]
    fn a_flipped_key_direction_is_not_settled_by_the_catalog_and_the_problem_shows_it() {
        let f = one(
            read_path(vec![
                ("member", visible("posts_visible", &["updated_at", "id"])),
                (
                    "moderator",
                    with_orders(
                        index("posts_all", &["updated_at", "id"], None),
                        &["", "DESC"],
                    ),
                ),
            ]),
            Kind::KeyDirection,
        );
        // With `updated_at` compared by equality both serve `ORDER BY id`: only a plan says.
        assert!(
            f.problem.starts_with(
                "posts_visible and its twin posts_all differ in key direction only: key \
                 directions differ: (updated_at, id) and (updated_at, id DESC); not settled"
            ),
            "{}",
            f.problem
        );
        assert!(!f.fails());
    }

    #[test]
    fn a_different_nulls_order_is_a_key_direction_difference() {
        let f = one(
            read_path(vec![
                (
                    "member",
                    with_orders(visible("posts_visible", &["updated_at"]), &["DESC"]),
                ),
                (
                    "moderator",
                    with_orders(
                        index("posts_all", &["updated_at"], None),
                        &["DESC NULLS LAST"],
                    ),
                ),
            ]),
            Kind::KeyDirection,
        );
        assert!(
            f.problem.contains(
                "key directions differ: (updated_at DESC) and (updated_at DESC NULLS LAST)"
            ),
            "{}",
            f.problem
        );
    }

    #[test]
    fn a_twin_mirrored_in_every_key_serves_the_same_order_scanned_backwards() {
        // Backwards, ASC NULLS LAST reads as DESC NULLS FIRST and NULLS FIRST as DESC NULLS
        // LAST: (a, b DESC, c NULLS FIRST) and (a DESC, b, c DESC NULLS LAST) serve one order.
        let keys = ["updated_at", "id", "deleted_at"];
        clean(read_path(vec![
            (
                "member",
                with_orders(
                    visible("posts_visible", &keys),
                    &["", "DESC", "NULLS FIRST"],
                ),
            ),
            (
                "moderator",
                with_orders(
                    index("posts_all", &keys, None),
                    &["DESC", "", "DESC NULLS LAST"],
                ),
            ),
        ]));
        // Mirrored but for one key: no scan direction serves both.
        let f = one(
            read_path(vec![
                (
                    "member",
                    with_orders(
                        visible("posts_visible", &keys),
                        &["", "DESC", "NULLS FIRST"],
                    ),
                ),
                (
                    "moderator",
                    with_orders(index("posts_all", &keys, None), &["DESC", "", ""]),
                ),
            ]),
            Kind::KeyDirection,
        );
        assert!(
            f.problem.contains(
                "key directions differ: (updated_at, id DESC, deleted_at NULLS FIRST) and \
                 (updated_at DESC, id, deleted_at)"
            ),
            "{}",
            f.problem
        );
    }

    #[test]
    fn orders_missing_from_old_saved_data_read_as_ascending() {
        let partial = || with_orders(visible("posts_visible", &["updated_at", "id"]), &[]);
        clean(read_path(vec![
            ("member", partial()),
            ("moderator", index("posts_all", &["updated_at", "id"], None)),
        ]));
        let f = one(
            read_path(vec![
                ("member", partial()),
                (
                    "moderator",
                    with_orders(
                        index("posts_all", &["updated_at", "id"], None),
                        &["", "DESC"],
                    ),
                ),
            ]),
            Kind::KeyDirection,
        );
        assert!(f.problem.contains("(updated_at, id DESC)"), "{}", f.problem);
        // Too short: the keys past the end are ascending.
        clean(read_path(vec![
            (
                "member",
                with_orders(visible("posts_visible", &["updated_at", "id"]), &["DESC"]),
            ),
            (
                "moderator",
                with_orders(
                    index("posts_all", &["updated_at", "id"], None),
                    &["DESC", ""],
                ),
            ),
        ]));
    }

    /// The key-direction finding of `posts_visible (updated_at, id)` against `posts_all
    /// (updated_at, id DESC)`.
    fn direction_finding() -> Finding {
        one(
            read_path(vec![
                ("member", visible("posts_visible", &["updated_at", "id"])),
                (
                    "moderator",
                    with_orders(
                        index("posts_all", &["updated_at", "id"], None),
                        &["", "DESC"],
                    ),
                ),
            ]),
            Kind::KeyDirection,
        )
    }

    fn facts<'a>(scope: &'a str, read: Option<&'a str>, sorts: &'a [String]) -> PlanFacts<'a> {
        PlanFacts {
            read_path: "thread-page",
            scope,
            read,
            sort_keys: sorts,
            at_production: false,
        }
    }

    /// The thread pages of the reference board: two read paths, each with both twins.
    fn two_read_paths(partial: IndexInfo, twin: IndexInfo) -> Vec<ReadPathIndexes> {
        ["thread-page-deep", "thread-page-first"]
            .into_iter()
            .map(|name| ReadPathIndexes {
                read_path: name.into(),
                ..read_path(vec![
                    ("member", partial.clone()),
                    ("moderator", twin.clone()),
                ])
            })
            .collect()
    }

    #[test]
    fn a_drift_two_read_paths_require_is_one_finding_naming_both() {
        // Regression: one drift was reported once per read path that requires the pair.
        let f = lint(&two_read_paths(
            visible("posts_visible", &["thread_id", "created_at"]),
            index("posts_all", &["created_at", "thread_id"], None),
        ));
        assert_eq!(f.len(), 1, "{}", render(&f));
        assert_eq!(f[0].read_path, "thread-page-deep");
        assert_eq!(f[0].read_paths, ["thread-page-deep", "thread-page-first"]);
        assert!(
            render(&f).starts_with(
                "thread-page-deep, thread-page-first: posts_visible and its twin posts_all \
                 drifted: key columns in a different order"
            ),
            "{}",
            render(&f)
        );
        // An invalid index both require: one finding too.
        let mut broken = visible("posts_visible", &["thread_id", "created_at"]);
        broken.valid = false;
        let f = lint(&two_read_paths(
            broken,
            index("posts_all", &["thread_id", "created_at"], None),
        ));
        assert_eq!(f.len(), 1, "{}", render(&f));
        assert_eq!(
            (f[0].kind, f[0].read_paths.len()),
            (Kind::Invalid, 2),
            "{}",
            render(&f)
        );
        // Different pairs stay apart.
        let mut rps = two_read_paths(
            visible("posts_visible", &["thread_id", "created_at"]),
            index("posts_all", &["created_at", "thread_id"], None),
        );
        rps[1] = ReadPathIndexes {
            read_path: "thread-page-first".into(),
            ..read_path(vec![
                ("member", visible("posts_visible_2", &["thread_id", "id"])),
                (
                    "moderator",
                    index("posts_all_2", &["id", "thread_id"], None),
                ),
            ])
        };
        assert_eq!(lint(&rps).len(), 2, "{}", render(&lint(&rps)));
    }

    #[test]
    fn a_key_direction_is_settled_by_each_read_path_s_own_plans() {
        // One key-direction finding for two read paths; only one has plans through both
        // indexes, and they sort on one side: drift there, not settled in the other.
        let f = lint(&two_read_paths(
            visible("posts_visible", &["updated_at", "id"]),
            with_orders(
                index("posts_all", &["updated_at", "id"], None),
                &["", "DESC"],
            ),
        ));
        assert_eq!(f.len(), 1, "{}", render(&f));
        assert_eq!(f[0].kind, Kind::KeyDirection);
        let sorted = vec!["p.updated_at".to_string()];
        let none: Vec<String> = vec![];
        let plans = [
            PlanFacts {
                read_path: "thread-page-first",
                ..facts("member", Some("posts_visible"), &none)
            },
            PlanFacts {
                read_path: "thread-page-first",
                ..facts("moderator", Some("posts_all"), &sorted)
            },
        ];
        let settled = settle_directions(f, &plans);
        assert_eq!(settled.len(), 2, "{}", render(&settled));
        assert_eq!(
            (settled[0].kind, settled[0].read_paths.as_slice()),
            (
                Kind::KeyDirection,
                ["thread-page-deep".to_string()].as_slice()
            ),
            "{}",
            render(&settled)
        );
        assert_eq!(
            (settled[1].kind, settled[1].read_paths.as_slice()),
            (
                Kind::TwinDrift,
                ["thread-page-first".to_string()].as_slice()
            ),
            "{}",
            render(&settled)
        );
        assert!(
            settled[1]
                .problem
                .contains("scope `moderator`'s plan through posts_all sorts"),
            "{}",
            render(&settled)
        );
        // With `--stats` the plans are production's, and the finding says so.
        let f = lint(&two_read_paths(
            visible("posts_visible", &["updated_at", "id"]),
            with_orders(
                index("posts_all", &["updated_at", "id"], None),
                &["", "DESC"],
            ),
        ));
        let at_production = plans.map(|p| PlanFacts {
            at_production: true,
            ..p
        });
        let settled = settle_directions(f, &at_production);
        assert!(
            settled[1].problem.contains(
                "scope `moderator`'s plan at production's statistics through posts_all sorts"
            ),
            "{}",
            render(&settled)
        );
    }

    #[test]
    fn key_directions_both_plans_serve_are_no_drift() {
        // Regression: `(a, b)` and `(a, b DESC)` were called drift although, with `a` compared by
        // equality, both serve the page (one scanned backwards) and neither plan sorts.
        let none: Vec<String> = vec![];
        let settled = settle_directions(
            vec![direction_finding()],
            &[
                facts("member", Some("posts_visible"), &none),
                facts("moderator", Some("posts_all"), &none),
            ],
        );
        assert!(settled.is_empty(), "{}", render(&settled));
    }

    #[test]
    fn a_key_direction_one_plan_sorts_for_is_drift_with_the_sort_as_evidence() {
        let none: Vec<String> = vec![];
        let sort = vec!["p.updated_at, p.id".to_string()];
        let settled = settle_directions(
            vec![direction_finding()],
            &[
                facts("member", Some("posts_visible"), &none),
                facts("moderator", Some("posts_all"), &sort),
            ],
        );
        assert_eq!(settled.len(), 1, "{}", render(&settled));
        let f = &settled[0];
        assert_eq!(f.kind, Kind::TwinDrift);
        assert!(f.fails());
        assert_eq!(
            f.problem,
            "posts_visible and its twin posts_all drifted: key directions differ: \
             (updated_at, id) and (updated_at, id DESC): scope `moderator`'s plan through \
             posts_all sorts (Sort Key: p.updated_at, p.id) where scope `member`'s plan through \
             the other needs no Sort"
        );
    }

    #[test]
    fn a_key_direction_no_plan_read_stays_unsettled() {
        let none: Vec<String> = vec![];
        let settled = settle_directions(
            vec![direction_finding()],
            &[
                facts("member", Some("posts_visible"), &none),
                facts("moderator", None, &none),
            ],
        );
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].kind, Kind::KeyDirection);
        assert!(!settled[0].fails());
    }

    #[test]
    fn a_named_twin_no_scope_requires_is_paired() {
        let rp = |twin: IndexInfo| {
            let mut rp = declare(
                read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
                "member",
                named("posts_all"),
            );
            rp.named_twins.push(("posts_all".into(), Some(twin)));
            rp
        };
        clean(rp(index("posts_all", &["thread_id"], None)));
        let f = one(
            rp(index("posts_all", &["created_at"], None)),
            Kind::TwinDrift,
        );
        assert_eq!(f.twin.as_deref(), Some("posts_all"));
        assert!(f.problem.contains("key columns differ"), "{}", f.problem);
        // An invalid named twin serves no one.
        let mut broken = index("posts_all", &["thread_id"], None);
        broken.ready = false;
        let f = one(rp(broken), Kind::Invalid);
        assert!(f.problem.contains("not ready"), "{}", f.problem);
    }

    #[test]
    fn a_named_twin_replaces_the_guess() {
        // The scope names posts_recent; posts_all, which another scope requires and which
        // would drift, is not compared.
        let mut rp = declare(
            read_path(vec![
                ("member", visible("posts_visible", &["thread_id"])),
                ("moderator", index("posts_all", &["created_at"], None)),
            ]),
            "member",
            named("public.posts_recent"),
        );
        rp.named_twins.push((
            "public.posts_recent".into(),
            Some(index("posts_recent", &["thread_id"], None)),
        ));
        clean(rp);
        // Named as the catalog names an index another scope requires: no lookup needed.
        let f = one(
            declare(
                read_path(vec![
                    ("member", visible("posts_visible", &["thread_id"])),
                    ("moderator", index("posts_all", &["created_at"], None)),
                ]),
                "member",
                named("public.posts_all"),
            ),
            Kind::TwinDrift,
        );
        assert_eq!(f.twin.as_deref(), Some("posts_all"));
    }

    #[test]
    fn a_named_twin_on_another_table_drifts() {
        let mut twin = index("threads_all", &["thread_id"], None);
        twin.table = "threads".into();
        let mut rp = declare(
            read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
            "member",
            named("threads_all"),
        );
        rp.named_twins.push(("threads_all".into(), Some(twin)));
        let f = one(rp, Kind::TwinDrift);
        assert!(
            f.problem
                .contains("on different tables (public.posts and public.threads)"),
            "{}",
            f.problem
        );
    }

    #[test]
    fn a_named_twin_that_does_not_exist_is_drift_not_missing() {
        // No check requires it, so no `missing-index` verdict would say so: lint must.
        let mut rp = declare(
            read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
            "member",
            named("posts_all"),
        );
        rp.named_twins.push(("posts_all".into(), None));
        let f = one(rp, Kind::TwinDrift);
        assert_eq!(
            f.problem,
            "the twin posts_all that scope `member` names for posts_visible does not exist"
        );
        // Not looked up by the caller: said, not guessed.
        let f = one(
            declare(
                read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
                "member",
                named("posts_all"),
            ),
            Kind::TwinDrift,
        );
        assert!(f.problem.ends_with("not settled"), "{}", f.problem);
        // Required by another scope and missing: the `missing` finding is the only one.
        let mut rp = declare(
            read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
            "member",
            named("posts_all"),
        );
        rp.required
            .push(("moderator".into(), "posts_all".into(), None));
        one(rp, Kind::Missing);
    }

    #[test]
    fn a_named_twin_with_a_predicate_is_drift_reported_once() {
        let rp = read_path(vec![
            ("member", visible("posts_visible", &["thread_id"])),
            (
                "guest",
                index("posts_public", &["thread_id"], Some("(NOT nsfw)")),
            ),
        ]);
        let f = one(
            declare(rp.clone(), "member", named("posts_public")),
            Kind::TwinDrift,
        );
        assert_eq!(
            f.problem,
            "the twin posts_public of posts_visible has a predicate (NOT nsfw): it must have \
             none to serve every row"
        );
        let both = declare(
            declare(rp, "member", named("posts_public")),
            "guest",
            named("posts_visible"),
        );
        one(both, Kind::TwinDrift);
    }

    #[test]
    fn naming_a_full_index_the_twin_of_a_full_index_is_found() {
        let f = one(
            declare(
                read_path(vec![
                    ("member", index("posts_by_thread", &["thread_id"], None)),
                    ("moderator", index("posts_all", &["thread_id"], None)),
                ]),
                "member",
                named("posts_all"),
            ),
            Kind::TwinDrift,
        );
        assert!(
            f.problem.contains("neither has a predicate"),
            "{}",
            f.problem
        );
        let f = one(
            declare(
                read_path(vec![("member", visible("posts_visible", &["thread_id"]))]),
                "member",
                named("posts_visible"),
            ),
            Kind::TwinDrift,
        );
        assert!(f.problem.contains("twin of itself"), "{}", f.problem);
    }

    #[test]
    fn a_scope_without_a_twin_on_purpose_gets_no_pairing_finding() {
        let drifting = || {
            read_path(vec![
                ("member", visible("posts_visible", &["thread_id"])),
                ("moderator", index("posts_all", &["created_at"], None)),
            ])
        };
        one(drifting(), Kind::TwinDrift);
        clean(declare(drifting(), "member", TwinDecl::NoneOnPurpose));
        // The full index's scope says it is no one's twin: not offered to the guess.
        clean(declare(drifting(), "moderator", TwinDecl::NoneOnPurpose));
        // Still checked for being valid and ready.
        let mut rp = declare(drifting(), "member", TwinDecl::NoneOnPurpose);
        rp.required[0].2.as_mut().unwrap().valid = false;
        one(rp, Kind::Invalid);
    }

    #[test]
    fn finding_json_field_names_and_kinds_are_stable() {
        let f = pair(
            visible("posts_visible", &["thread_id"]),
            Some(index("posts_all", &["created_at"], None)),
        );
        let json = serde_json::to_value(&f[0]).unwrap();
        let mut fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "definitions",
                "index",
                "kind",
                "problem",
                "read_path",
                "read_paths",
                "twin"
            ]
        );
        let kinds: Vec<_> = [
            Kind::Missing,
            Kind::Invalid,
            Kind::TwinDrift,
            Kind::Unchecked,
        ]
        .iter()
        .map(|k| serde_json::to_value(k).unwrap())
        .collect();
        assert_eq!(
            kinds,
            ["missing", "invalid", "twin-drift", "unchecked"].map(serde_json::Value::from)
        );
    }
}
