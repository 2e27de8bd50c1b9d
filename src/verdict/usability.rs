//! `not-usable` or `not-chosen`: when an accepted index is not in the plan, whether any plan can
//! use it for this SQL. Ask PostgreSQL, never re-implement it: each answer names the evidence
//! that settled it ([`Settled`]), tried in this order.
//!
//! 1. **re-plan** — a re-plan on the measured server with scan types disabled (or, with
//!    `--replan-without-rivals`, with the rival indexes dropped) read the index: usable, and its
//!    cost at this data is known.
//! 2. **scratch** — a re-plan on a schema-only copy of what the read path touches, on a local
//!    server of the same major version, every other index of the table dropped and seq scans
//!    off (see [`crate::db::scratch`]): the index in the plan proves it usable; no plan through
//!    it, with nothing else left to choose, proves it not usable. No data, no statistics:
//!    whether the planner *can* use an index depends on the definitions only.
//! 3. **re-plan** again — with the rivals dropped on the measured server and seq scans off, no
//!    plan read the table through any index: not usable.
//! 4. **rule** — where no scratch re-plan could be made: a rule of PostgreSQL's own proof
//!    procedure for partial indexes (`predtest.c`, see [`super::predicate`]) shows a conjunct of
//!    the predicate cannot be implied by any one condition on the table (not usable), or that
//!    each conjunct is one of the conditions the plans applied (usable: the planner can always
//!    read a partial index whose predicate it proved).
//! 5. Otherwise not settled: `not-chosen` with `usable` unknown and the reason, which
//!    `--require usable` does not forgive.
//!
//! What a message says of the plans is what they show: which index each re-plan read the table
//! by (never "won every re-plan" unless it did), the node through the index with its Index Cond
//! and whether the plan sorts, the predicate beside the conditions the plan applied. Costs are
//! quoted only from the measured server: the scratch copy has no statistics.
//!
//! Up to PostgreSQL 17 a disabled path costs 1e10 more; PostgreSQL 18 marks such nodes
//! `Disabled`. Either way the index is found by name, never inferred from a cost.

use super::plan::{DISABLED_COST, PlanVerdict, Rules, describe_scan, is_required_index};
use super::predicate::{Conjunct, cannot_imply, implies, mentions};
use super::{RequiredIndex, Settled, Verdict};
use crate::plan::explain::{Explain, PlanNode, ScanKind};

/// A plan made while probing whether the required index can serve the statement at all: the
/// same statement re-planned (without running it) on the measured server with sequential scans
/// and, rung by rung, competing scan types disabled: [`crate::measure::Probe`], read.
#[derive(Debug, Clone)]
pub struct ProbePlan {
    /// The settings turned off: `enable_seqscan`, ….
    pub disabled: Vec<String>,
    /// The rival indexes set aside (`--replan-without-rivals`), if any.
    pub dropped: Vec<String>,
    pub plan: Explain,
}

/// A re-plan on the scratch copy, read: the local server's version, what was dropped there,
/// and the plan.
#[derive(Debug, Clone)]
pub struct ScratchPlan {
    pub server_version: String,
    pub dropped: Vec<String>,
    pub plan: Explain,
    /// Where the plan above did not read the index: the re-plans with it beside each other
    /// index of the table in turn ([`crate::measure::Together`]); `None` where none were made.
    pub together: Option<TogetherPlans>,
}

/// The re-plans on the copy with the index beside one other index of its table, read.
#[derive(Debug, Clone)]
pub struct TogetherPlans {
    /// The other indexes kept beside it, one re-plan each.
    pub tried: Vec<String>,
    /// The settings turned off in those re-plans.
    pub disabled: Vec<String>,
    /// The first that read the index: the other index kept, and the plan.
    pub found: Option<(String, Explain)>,
}

/// What the measurement holds of the scratch copy for this index and plan: a plan, why none was
/// made, or nothing at all (a measurement saved before scratch re-plans existed, or a question
/// the measuring side did not see as open).
#[derive(Debug, Clone, Copy)]
pub enum Scratch<'a> {
    Planned(&'a ScratchPlan),
    NotMade(&'a str),
    Absent,
}

/// Which plan `--explain` shows beside the verdict: the measured re-plan that read the index, or
/// the scratch re-plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Probe(usize),
    Scratch,
    /// The scratch re-plan that read the index beside another.
    Together,
}

/// The answer, with its evidence.
#[derive(Debug, Clone)]
pub struct Usability {
    pub verdict: PlanVerdict,
    /// `Some(true)`: proved usable; `Some(false)`: proved not; `None`: not settled.
    pub usable: Option<bool>,
    pub shown: Option<Shown>,
    /// What settled it; `None` when nothing did.
    pub settled_by: Option<Settled>,
    /// Why it is not settled, when it is not.
    pub unsettled: Option<String>,
}

fn off(disabled: &[String]) -> String {
    disabled
        .iter()
        .map(|g| format!("{g} = off"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits a `not-chosen` verdict into `not-chosen` (usable, or not settled) and `not-usable`.
pub fn judge_usability(
    verdict: PlanVerdict,
    chosen: &Explain,
    probes: &[ProbePlan],
    scratch: Scratch<'_>,
    rules: &Rules<'_>,
    non_immutable: &[String],
) -> Usability {
    if verdict.verdict != Verdict::NotChosen {
        return Usability {
            verdict,
            usable: None,
            shown: None,
            settled_by: None,
            unsettled: None,
        };
    }
    let ev = Evidence::gather(chosen, probes, rules.index);
    let name = &rules.index.name;
    if let Some(i) = ev.found {
        let probe = &probes[i];
        let through = through(&probe.plan, rules.index)
            .map(|t| format!(" The re-plan {t}."))
            .unwrap_or_default();
        return usable(
            verdict,
            Settled::Replan,
            Some(Shown::Probe(i)),
            format!(
                "{name} is usable (a re-plan with {} read it), but at these statistics the \
                 planner preferred another plan: {}.{through}",
                how_found(probe),
                costs(chosen, probe, name, &ev.tables),
            ),
        );
    }
    match scratch {
        Scratch::Planned(copy) => return on_copy(verdict, copy, &ev, rules, non_immutable),
        Scratch::NotMade(_) | Scratch::Absent => {}
    }
    let why_not_copied = match scratch {
        Scratch::NotMade(why) => why.to_string(),
        _ => "none in this measurement".to_string(),
    };
    if let Some(proof) = &ev.set_aside_proof {
        return not_usable(
            verdict,
            Settled::Replan,
            format!("{name} cannot serve this SQL: {proof}."),
        );
    }
    match rules.index.predicate.as_deref() {
        Some(predicate) => partial_index(verdict, predicate, &ev, non_immutable, &why_not_copied),
        None => not_settled(
            verdict,
            &why_not_copied,
            format!(
                "{}; whether {name} can serve this SQL at all is not settled. Its keys: {}.",
                ev.replans_chose(),
                rules.index.keys.join(", ")
            ),
        ),
    }
}

/// What the plans (the chosen one and the re-plans) show about the required index's table.
struct Evidence<'a> {
    index: &'a RequiredIndex,
    /// The table and its partitions: where the plans' conditions on it are.
    tables: Vec<&'a str>,
    /// The re-plan that read the index, if one did.
    found: Option<usize>,
    /// Each re-plan: what it disabled or set aside, and how it read the table.
    replans: Vec<Replan>,
    /// The other indexes the plans read the table by.
    rivals: Vec<String>,
    /// What the plans show to hold on the table: its conditions, and the predicates of the
    /// partial indexes the planner used on it (it proved them, and prints no condition they
    /// imply).
    known: Vec<Conjunct>,
    /// The chosen plan's conditions on the table, as printed, for the message.
    shown_conditions: String,
    /// With rivals set aside and seq scans disabled, no plan read the table through any index.
    set_aside_proof: Option<String>,
}

impl<'a> Evidence<'a> {
    // Long because it reads every plan once for everything the rules after it ask: the table's
    // conditions, the rivals, the predicates proved, the set-aside proof.
    fn gather(chosen: &Explain, probes: &[ProbePlan], index: &'a RequiredIndex) -> Evidence<'a> {
        // A partitioned table is read through its partitions: their scans hold the conditions.
        let tables: Vec<&str> = std::iter::once(index.table.as_str())
            .chain(index.partitions.iter().map(|p| p.table.as_str()))
            .collect();
        let found = probes.iter().position(|p| reads(&p.plan, index));
        let replans = probes
            .iter()
            .map(|p| Replan {
                how: how_found(p),
                read: read_on(&p.plan, &tables),
                indexes: indexes_on(&p.plan, &tables),
            })
            .collect();
        let plans: Vec<&Explain> = std::iter::once(chosen)
            .chain(probes.iter().map(|p| &p.plan))
            .collect();
        let mut known: Vec<Conjunct> = Vec::new();
        let mut rivals: Vec<&str> = Vec::new();
        for plan in &plans {
            for t in &tables {
                for c in plan.conditions_on(t) {
                    known.extend(index.conjuncts(&c));
                }
            }
            for s in plan.scans() {
                if s.kind.uses_index()
                    && s.relation.is_some_and(|r| tables.contains(&r))
                    && let Some(n) = s.node.index_name.as_deref()
                    && !rivals.contains(&n)
                {
                    rivals.push(n);
                }
            }
        }
        // A sibling partial index the planner read: the planner proved its predicate.
        for rival in &rivals {
            if let Some(p) = index
                .siblings
                .iter()
                .find(|s| s.name == *rival)
                .and_then(|s| s.predicate.as_deref())
            {
                known.extend(index.conjuncts(p));
            }
        }
        let rivals: Vec<String> = rivals
            .into_iter()
            .filter(|r| *r != index.name)
            .map(str::to_string)
            .collect();
        let shown = conditions_text(chosen, &tables);
        let set_aside_proof = probes
            .iter()
            .find(|p| {
                !p.dropped.is_empty()
                    && !p.disabled.is_empty()
                    && !p.plan.scans().iter().any(|s| {
                        s.kind.uses_index() && s.relation.is_some_and(|r| tables.contains(&r))
                    })
            })
            .map(|p| {
                format!(
                    "with {} set aside and {} (in a rolled-back transaction on the measured \
                     server, --replan-without-rivals), no plan reads {} through any index",
                    p.dropped.join(", "),
                    off(&p.disabled),
                    index.table
                )
            });
        Evidence {
            index,
            tables,
            found,
            replans,
            rivals,
            known,
            shown_conditions: shown,
            set_aside_proof,
        }
    }

    /// What the re-plans on the measured server read the table by: one sentence, each re-plan
    /// named, or "every re-plan" only when they all read it through the same one index (the
    /// scan type aside), which is named with "(same predicate)" where that is so.
    fn replans_chose(&self) -> String {
        let table = &self.index.table;
        let by_index: Vec<&Vec<String>> = self.replans.iter().map(|r| &r.indexes).collect();
        match self.replans.as_slice() {
            [] => format!(
                "no re-plan was made on the measured server for {}",
                self.index.name
            ),
            [one] => format!("the re-plan with {} read {table} by {}", one.how, one.read),
            all if by_index.iter().all(|i| i.len() == 1 && *i == by_index[0]) => {
                let rival = &by_index[0][0];
                let same = self.index.predicate.is_some()
                    && self
                        .index
                        .siblings
                        .iter()
                        .find(|s| &s.name == rival)
                        .is_some_and(|s| s.predicate == self.index.predicate);
                format!(
                    "{rival}{} was chosen instead in every re-plan on the measured server ({})",
                    if same { " (same predicate)" } else { "" },
                    all.len()
                )
            }
            all if all.iter().all(|r| r.read == all[0].read) => format!(
                "every re-plan on the measured server ({}) read {table} by {}",
                all.len(),
                all[0].read
            ),
            all => format!(
                "the re-plans on the measured server read {table}: {}",
                all.iter()
                    .map(|r| format!("with {}, by {}", r.how, r.read))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

/// One re-plan on the measured server: what it disabled or set aside, how it read the table,
/// and through which indexes.
struct Replan {
    how: String,
    read: String,
    indexes: Vec<String>,
}

/// Whether `plan` reads the index (a partitioned one through any of its leaves).
fn reads(plan: &Explain, index: &RequiredIndex) -> bool {
    let leaves: Vec<&str> = index
        .partitions
        .iter()
        .filter_map(|p| p.leaf_index.as_deref())
        .collect();
    plan.scans().iter().any(|s| {
        is_required_index(s, index)
            || (s.kind.uses_index()
                && s.node
                    .index_name
                    .as_deref()
                    .is_some_and(|n| leaves.contains(&n)))
    })
}

/// How `plan` reads the tables, as a reader names the access paths (`Index Scan using x`, `Seq
/// Scan (disabled, chosen anyway)`).
fn read_on(plan: &Explain, tables: &[&str]) -> String {
    let mut out: Vec<String> = Vec::new();
    for s in plan.scans() {
        if s.kind == ScanKind::BitmapHeap || !s.relation.is_some_and(|r| tables.contains(&r)) {
            continue;
        }
        let text = describe_scan(&s, false);
        if !out.contains(&text) {
            out.push(text);
        }
    }
    if out.is_empty() {
        "no scan of it".into()
    } else {
        out.join(" and ")
    }
}

/// The indexes `plan` reads the tables through, in order of first use.
fn indexes_on(plan: &Explain, tables: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in plan.scans() {
        if s.kind.uses_index()
            && s.relation.is_some_and(|r| tables.contains(&r))
            && let Some(n) = &s.node.index_name
            && !out.contains(n)
        {
            out.push(n.clone());
        }
    }
    out
}

/// The conditions `plan` applies to the tables, as printed, or "none".
fn conditions_text(plan: &Explain, tables: &[&str]) -> String {
    let mut shown: Vec<String> = Vec::new();
    for t in tables {
        for c in plan.conditions_on(t) {
            if !shown.contains(&c) {
                shown.push(c);
            }
        }
    }
    if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    }
}

/// How a plan reads the index, from the plan itself: the node, its Index Cond (or that it has
/// none), and whether the plan sorts anywhere. `None` when the plan does not read it.
pub(super) fn through(plan: &Explain, index: &RequiredIndex) -> Option<String> {
    let leaves: Vec<&str> = index
        .partitions
        .iter()
        .filter_map(|p| p.leaf_index.as_deref())
        .collect();
    let scan = plan.scans().into_iter().find(|s| {
        s.kind.uses_index()
            && s.node
                .index_name
                .as_deref()
                .is_some_and(|n| n == index.name || leaves.contains(&n))
    })?;
    let cond = match (&scan.node.index_cond, scan.kind) {
        (Some(c), _) => format!("Index Cond: {c}"),
        (None, ScanKind::BitmapIndex) => {
            "no Index Cond: the whole index is read into a bitmap".into()
        }
        (None, _) => {
            "no Index Cond: the index is walked in its order, whole or until a LIMIT stops it"
                .into()
        }
    };
    let sort = plan
        .nodes()
        .into_iter()
        .find(|n| n.node_type.ends_with("Sort") && !n.sort_key.is_empty())
        .map(|n| {
            format!(
                "; the plan sorts ({}: {})",
                n.node_type,
                n.sort_key.join(", ")
            )
        })
        .unwrap_or_else(|| "; the plan has no Sort".into());
    Some(format!(
        "reads it by {} ({cond}){sort}",
        describe_scan(&scan, false)
    ))
}

/// The answer of the scratch copy's re-plan, with the rule that explains a `not-usable` where
/// one does.
fn on_copy(
    verdict: PlanVerdict,
    copy: &ScratchPlan,
    ev: &Evidence<'_>,
    rules: &Rules<'_>,
    non_immutable: &[String],
) -> Usability {
    let index = rules.index;
    let (name, table) = (&index.name, &index.table);
    let major = copy
        .server_version
        .split(['.', ' '])
        .next()
        .unwrap_or(&copy.server_version);
    let alone = if copy.dropped.is_empty() {
        format!("{name} the only index on {table}")
    } else {
        format!(
            "every other index on {table} dropped ({})",
            few(&copy.dropped)
        )
    };
    let setting = format!(
        "on a schema-only copy on PostgreSQL {major} (no data, no statistics), with {alone} and \
         seq scans disabled"
    );
    if reads(&copy.plan, index) {
        let through = through(&copy.plan, index).unwrap_or_default();
        return usable(
            verdict,
            Settled::Scratch,
            Some(Shown::Scratch),
            format!(
                "{name} is usable: {setting}, the planner {through}. At this data and these \
                 statistics it preferred the plan above; {}; its cost was not measured \
                 (--replan-without-rivals measures it, on a database that is yours; the copy \
                 has no statistics).",
                ev.replans_chose()
            ),
        );
    }
    let instead = read_on(&copy.plan, &ev.tables);
    if let Some(together) = &copy.together
        && let Some((with, plan)) = &together.found
        && reads(plan, index)
    {
        return usable_together(verdict, ev, with, plan, together, &instead, major);
    }
    let mut why = format!(
        "{name} cannot serve this SQL: {setting}, the planner still reads {table} by {instead}, \
         never through {name}."
    );
    match &copy.together {
        Some(t) if t.tried.is_empty() => why.push_str(&format!(
            " {table} has no other index for {name} to serve it beside (in a BitmapOr or \
             BitmapAnd)."
        )),
        Some(t) => why.push_str(&format!(
            " Nor does it serve it beside another index of {table} (in a BitmapOr or \
             BitmapAnd): kept with each in turn ({}), every other dropped and {}, no plan read \
             {name}.",
            few(&t.tried),
            off(&t.disabled)
        )),
        None => {}
    }
    match index.predicate.as_deref() {
        Some(predicate) => {
            why.push_str(&format!(
                " Its predicate {predicate}; the conditions on {table}: {}.",
                ev.shown_conditions
            ));
            let wanted = index.conjuncts(predicate);
            let unproved: Vec<&Conjunct> = wanted
                .iter()
                .filter(|p| !ev.known.iter().any(|c| implies(c, p)))
                .collect();
            if let Some(cause) = causes(&unproved, &ev.known, non_immutable).first() {
                why.push_str(&format!(" {}{cause}.", super::PROOF_RULES));
            } else if let Some(cause) = unproved.iter().find_map(|p| {
                ev.known
                    .iter()
                    .find_map(|c| super::predicate::boolean_test_mismatch(c, p))
            }) {
                why.push_str(&format!(" The condition that fails: {cause}."));
            }
        }
        None => {
            why.push_str(&format!(
                " Its keys: {}; the conditions on {table}: {}.",
                index.keys.join(", "),
                ev.shown_conditions
            ));
            if let Some(cause) = index.keys.first().and_then(|k| {
                super::predicate::raw_column_against_expression(k, &ev.known)
                    .or_else(|| super::predicate::case_insensitive_match(k, &ev.known))
            }) {
                why.push_str(&format!(" The condition that fails: {cause}."));
            }
        }
    }
    Usability {
        shown: Some(Shown::Scratch),
        ..not_usable(verdict, Settled::Scratch, why)
    }
}

/// The index serves the statement only beside another index of its table: the copy's plan
/// with the two kept shows the node that combines them. Usable: whether it was chosen is the
/// check's question, as for any usable index.
fn usable_together(
    verdict: PlanVerdict,
    ev: &Evidence<'_>,
    with: &str,
    plan: &Explain,
    together: &TogetherPlans,
    alone: &str,
    major: &str,
) -> Usability {
    let index = ev.index;
    let (name, table) = (&index.name, &index.table);
    let combined = combining_node(plan, index)
        .map(|(node, arms)| format!("in a {node} ({})", arms.join(", ")))
        .unwrap_or_else(|| format!("beside {with}"));
    let through = through(plan, index).unwrap_or_default();
    usable(
        verdict,
        Settled::Scratch,
        Some(Shown::Together),
        format!(
            "{name} is usable together with {with} {combined}: on a schema-only copy on \
             PostgreSQL {major} (no data, no statistics), alone on {table} (every other index dropped) \
             with seq scans disabled it served no plan (the planner read {table} by {alone}), and with {with} \
             kept beside it and {}, the planner {through}. At this \
             data and these statistics it preferred the plan above; {}.",
            off(&together.disabled),
            ev.replans_chose()
        ),
    )
}

/// The BitmapOr or BitmapAnd that reads the index beside others in `plan`, and the indexes of
/// its arms, in the plan's order.
fn combining_node<'p>(plan: &'p Explain, index: &RequiredIndex) -> Option<(&'p str, Vec<String>)> {
    fn arms(node: &PlanNode, out: &mut Vec<String>) {
        if let Some(n) = &node.index_name {
            out.push(n.clone());
        }
        for c in &node.children {
            arms(c, out);
        }
    }
    plan.nodes().into_iter().find_map(|n| {
        if n.node_type != "BitmapOr" && n.node_type != "BitmapAnd" {
            return None;
        }
        let mut names = Vec::new();
        arms(n, &mut names);
        names
            .iter()
            .any(|a| {
                *a == index.name
                    || index
                        .partitions
                        .iter()
                        .any(|p| p.leaf_index.as_deref() == Some(a))
            })
            .then_some((n.node_type.as_str(), names))
    })
}

/// A partial index with no plan to settle it: the rules of PostgreSQL's proof procedure, where
/// one applies; otherwise not settled.
fn partial_index(
    verdict: PlanVerdict,
    predicate: &str,
    ev: &Evidence<'_>,
    non_immutable: &[String],
    why_not_copied: &str,
) -> Usability {
    let index = ev.index;
    let (name, table) = (&index.name, &index.table);
    let wanted = index.conjuncts(predicate);
    let unproved: Vec<&Conjunct> = wanted
        .iter()
        .filter(|p| !ev.known.iter().any(|c| implies(c, p)))
        .collect();
    let conditions = &ev.shown_conditions;
    if unproved.is_empty() && ev.rivals.is_empty() && !ev.replans.is_empty() {
        // The rule says implied, yet with seq scans disabled no re-plan read the table through
        // any index: the plans contradict the rule, and nothing is claimed.
        return not_settled(
            verdict,
            why_not_copied,
            format!(
                "its predicate {predicate} appears among the conditions on {table}, yet {}, \
                 never through {name} or another index, so whether {name} can serve this SQL \
                 is not settled.",
                ev.replans_chose()
            ),
        );
    }
    if unproved.is_empty() {
        return usable(
            verdict,
            Settled::Rule,
            None,
            format!(
                "{name} is usable: each conjunct of its predicate {predicate} is one of the \
                 conditions the plans applied to {table} (PostgreSQL proves a partial index's \
                 predicate from such a condition, and can then always read the index); {} \
                 (no scratch re-plan: {why_not_copied}).",
                ev.replans_chose()
            ),
        );
    }
    let not_implied = format!(
        "its predicate {predicate} is not implied by the conditions on {table} ({conditions})"
    );
    if let Some(cause) = causes(&unproved, &ev.known, non_immutable).first() {
        return not_usable(
            verdict,
            Settled::Rule,
            format!(
                "{name} cannot serve this SQL: {not_implied}. {}{cause} (no scratch re-plan: \
                 {why_not_copied}).",
                super::PROOF_RULES
            ),
        );
    }
    let or = if ev.known.iter().any(|c| c.text.contains(" OR ")) {
        format!(
            " (an OR among them: {name} may serve one of its arms beside another index of \
             {table} in a BitmapOr, which only a re-plan on a scratch copy settles)"
        )
    } else {
        String::new()
    };
    not_settled(
        verdict,
        why_not_copied,
        format!(
            "{}; whether the conditions on {table} ({conditions}) imply its predicate \
             {predicate} is not settled by the plans or by a rule{or}.",
            ev.replans_chose()
        ),
    )
}

/// For each conjunct of the predicate no condition implies, why it cannot be, where a rule shows
/// it: no condition on its column, or every condition on its column shown unable to imply it.
fn causes(unproved: &[&Conjunct], known: &[Conjunct], non_immutable: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for p in unproved {
        let columns = p.columns();
        let on_column: Vec<&Conjunct> = known
            .iter()
            .filter(|c| {
                columns
                    .iter()
                    .any(|col| mentions(std::slice::from_ref(*c), col))
            })
            .collect();
        if on_column.is_empty() {
            if let Some(col) = columns.first() {
                out.push(format!(
                    "the query puts no condition on {col}, which the predicate constrains (`{}`)",
                    p.text
                ));
            }
            continue;
        }
        // An OR never implies a predicate one of its arms alone implies, yet the planner can
        // read the index for that arm beside another index for the others (a BitmapOr): only a
        // re-plan settles that, never this rule.
        if on_column.iter().any(|c| c.text.contains(" OR ")) {
            continue;
        }
        let each: Vec<Option<String>> = on_column
            .iter()
            .map(|c| cannot_imply(c, p, non_immutable))
            .collect();
        if each.iter().all(Option::is_some)
            && let Some(Some(first)) = each.into_iter().next()
        {
            out.push(first);
        }
    }
    out
}

/// Names, the first three of them and how many in all where there are more.
fn few(names: &[String]) -> String {
    if names.len() <= 3 {
        names.join(", ")
    } else {
        format!("{}, … {} in all", names[..3].join(", "), names.len())
    }
}

/// What a re-plan changed, as a reader would write it.
fn how_found(probe: &ProbePlan) -> String {
    let mut parts = Vec::new();
    if !probe.dropped.is_empty() {
        parts.push(format!("{} set aside", probe.dropped.join(", ")));
    }
    if !probe.disabled.is_empty() {
        parts.push(off(&probe.disabled));
    }
    if parts.is_empty() {
        "nothing disabled".into()
    } else {
        parts.join(" and ")
    }
}

fn usable(
    verdict: PlanVerdict,
    settled_by: Settled,
    shown: Option<Shown>,
    why: String,
) -> Usability {
    Usability {
        verdict: PlanVerdict {
            message: format!("{}. {why}", verdict.message),
            ..verdict
        },
        usable: Some(true),
        shown,
        settled_by: Some(settled_by),
        unsettled: None,
    }
}

fn not_usable(verdict: PlanVerdict, settled_by: Settled, why: String) -> Usability {
    Usability {
        verdict: PlanVerdict {
            verdict: Verdict::NotUsable,
            message: format!("{why} {}", verdict.message),
            ..verdict
        },
        usable: Some(false),
        shown: None,
        settled_by: Some(settled_by),
        unsettled: None,
    }
}

fn not_settled(verdict: PlanVerdict, why_not_copied: &str, what: String) -> Usability {
    Usability {
        verdict: PlanVerdict {
            message: format!(
                "{}. Usability not settled: {what} No scratch re-plan: {why_not_copied}.",
                verdict.message
            ),
            ..verdict
        },
        usable: None,
        shown: None,
        settled_by: None,
        unsettled: Some(why_not_copied.to_string()),
    }
}

/// The two costs, and what the second one is worth. A ratio is given only where the plan
/// through the index is the planner's own best plan through it: no node disabled, no whole scan
/// type off that the index's own cheapest path may be (index, index-only or bitmap scans), and
/// seq scans off only where the plan reads no relation but the index's table (elsewhere a seq
/// scan the cheapest plan through the index would use was ruled out). Otherwise its cost is an
/// upper bound on that best plan's, given as a bound, never as a ratio.
fn costs(chosen: &Explain, probe: &ProbePlan, name: &str, tables: &[&str]) -> String {
    let chosen_cost = chosen.root.total_cost;
    let index_cost = probe.plan.root.total_cost;
    let still_disabled = probe.plan.nodes().iter().any(|n| {
        n.disabled == Some(true) || (n.children.is_empty() && n.total_cost >= DISABLED_COST)
    });
    if still_disabled {
        return format!(
            "the chosen plan costs {chosen_cost:.2}; the plan using {name} (with {}) still needs \
             a disabled path elsewhere, so its cost does not compare",
            off(&probe.disabled)
        );
    }
    let bound = upper_bound(probe, tables);
    let ratio = if chosen_cost > 0.0 {
        format!("{:.1}×", index_cost / chosen_cost)
    } else {
        "the chosen plan costs nothing".into()
    };
    if !probe.dropped.is_empty() {
        let aside = probe.dropped.join(", ");
        let seq = if probe.disabled.is_empty() {
            String::new()
        } else {
            format!(
                " and {} (a seq scan was cheaper still)",
                off(&probe.disabled)
            )
        };
        return match bound {
            None => format!(
                "the chosen plan costs {chosen_cost:.2}; with {aside} set aside{seq} in a \
                 rolled-back transaction (--replan-without-rivals), the planner's own plan \
                 through {name} costs {index_cost:.2} ({ratio})"
            ),
            // The settings are named in the sentence already: the bound refers back to them.
            Some(bound) => format!(
                "the chosen plan costs {chosen_cost:.2}; with {aside} set aside{seq} in a \
                 rolled-back transaction (--replan-without-rivals), a plan through {name} costs \
                 at most {index_cost:.2} (an upper bound, so no ratio: {} {}{})",
                bound.referred(&probe.disabled),
                if bound.blamed.len() == 1 {
                    "is off"
                } else {
                    "are off"
                },
                bound.why
            ),
        };
    }
    match bound {
        Some(bound) => format!(
            "the chosen plan costs {chosen_cost:.2}; a plan using {name} costs at most \
             {index_cost:.2} (an upper bound, so no ratio: found with {}; --explain shows \
             that plan)",
            bound.found_with(&probe.disabled)
        ),
        None => format!(
            "the chosen plan costs {chosen_cost:.2}, a plan using {name} costs {index_cost:.2} \
             ({ratio}; found with {})",
            off(&probe.disabled)
        ),
    }
}

/// Why a re-plan's cost is only an upper bound on the planner's best plan through the index:
/// the settings it disabled that may have ruled that plan out, and how.
#[derive(Debug, PartialEq, Eq)]
struct Bound {
    /// The disabled settings to blame, a subset of the re-plan's.
    blamed: Vec<String>,
    /// What they may have ruled out, a clause that follows their names: `, which may rule out
    /// the index's own cheapest path`.
    why: &'static str,
}

impl Bound {
    /// Every setting the re-plan disabled, each named once, the blamed ones last with what they
    /// may rule out: `enable_seqscan = off and with enable_bitmapscan = off, which may rule out
    /// the index's own cheapest path`.
    fn found_with(&self, disabled: &[String]) -> String {
        let others: Vec<String> = disabled
            .iter()
            .filter(|d| !self.blamed.contains(d))
            .cloned()
            .collect();
        let blamed = format!("{}{}", off(&self.blamed), self.why);
        if others.is_empty() {
            blamed
        } else {
            format!("{} and with {blamed}", off(&others))
        }
    }

    /// The blamed settings, where the sentence has named `disabled` already: `that setting`,
    /// `those settings`, or their names when only some of them are blamed.
    fn referred(&self, disabled: &[String]) -> String {
        match (self.blamed.len() == disabled.len(), self.blamed.as_slice()) {
            (true, [_]) => "that setting".into(),
            (true, _) => "those settings".into(),
            (false, blamed) => blamed.join(", "),
        }
    }
}

/// Why the cost of `probe`'s plan through the index is only an upper bound on the planner's
/// best plan through it; `None` where it is that plan's cost.
fn upper_bound(probe: &ProbePlan, tables: &[&str]) -> Option<Bound> {
    const OWN: [&str; 3] = [
        "enable_indexscan",
        "enable_indexonlyscan",
        "enable_bitmapscan",
    ];
    let blamed = |names: Vec<&str>, why: &'static str| {
        (!names.is_empty()).then(|| Bound {
            blamed: names.into_iter().map(str::to_string).collect(),
            why,
        })
    };
    let own: Vec<&str> = probe
        .disabled
        .iter()
        .map(|d| d.as_str())
        .filter(|d| OWN.contains(d))
        .collect();
    if let Some(bound) = blamed(own, ", which may rule out the index's own cheapest path") {
        return Some(bound);
    }
    let others = |d: &str| {
        probe.disabled.iter().any(|s| s == d)
            && probe
                .plan
                .scans()
                .iter()
                .any(|s| s.relation.is_some_and(|r| !tables.contains(&r)))
    };
    let whole: Vec<&str> = ["enable_seqscan", "enable_tidscan"]
        .into_iter()
        .filter(|d| others(d))
        .collect();
    if let Some(bound) = blamed(
        whole,
        " on every relation the plan reads, which may rule out the way the cheapest plan \
         through the index reads another one",
    ) {
        return Some(bound);
    }
    let unknown: Vec<&str> = probe
        .disabled
        .iter()
        .map(|d| d.as_str())
        .filter(|d| !matches!(*d, "enable_seqscan" | "enable_tidscan"))
        .collect();
    blamed(
        unknown,
        ", which may rule out a path of the cheapest plan through the index",
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::verdict::plan::judge_plan;

    fn index(predicate: Option<&str>) -> RequiredIndex {
        RequiredIndex {
            schema: "public".into(),
            name: "events_live".into(),
            table: "events".into(),
            predicate: predicate.map(str::to_string),
            keys: vec!["account_id".into()],
            orders: vec![String::new()],
            siblings: vec![],
            columns: vec![],
            partitions: vec![],
        }
    }

    fn plan(doc: Value) -> Explain {
        Explain::from_json(&doc).unwrap()
    }

    fn scan(index: Option<&str>, cond: Option<&str>) -> Value {
        let mut node = match index {
            Some(i) => json!({ "Node Type": "Index Scan", "Index Name": i,
                               "Relation Name": "events", "Schema": "public",
                               "Total Cost": 8.0 }),
            None => json!({ "Node Type": "Seq Scan", "Relation Name": "events",
                            "Schema": "public", "Total Cost": 100.0,
                            "Filter": "(events.kind = ANY ('{a,x}'::text[]))" }),
        };
        if let Some(c) = cond {
            node["Index Cond"] = json!(c);
        }
        json!([{ "Plan": node }])
    }

    fn copy(doc: Value) -> ScratchPlan {
        ScratchPlan {
            server_version: "15.18 (Debian 15.18-0+deb12u1)".into(),
            dropped: vec!["events_account".into(), "events_pkey".into()],
            plan: plan(doc),
            together: None,
        }
    }

    /// A Bitmap Heap Scan on events over a BitmapOr of `arms`.
    fn bitmap_or(arms: &[&str]) -> Value {
        let arms: Vec<Value> = arms
            .iter()
            .map(|a| {
                json!({ "Node Type": "Bitmap Index Scan", "Index Name": a,
                             "Total Cost": 4.0 })
            })
            .collect();
        json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "events",
                           "Schema": "public", "Total Cost": 12.0,
                           "Recheck Cond": "((events.read_at IS NOT NULL) OR (events.hidden_at IS NOT NULL))",
                           "Plans": [{ "Node Type": "BitmapOr", "Total Cost": 8.0,
                                       "Plans": arms }] } }])
    }

    fn alone_refused() -> Value {
        let mut seq = scan(None, None);
        seq[0]["Plan"]["Total Cost"] = json!(1.0e10 + 100.0);
        seq
    }

    #[test]
    fn an_index_that_serves_only_beside_its_sibling_in_a_bitmap_or_is_usable() {
        // Regression: an index usable only as one arm of a BitmapOr (a partial index per arm
        // of `read_at IS NOT NULL OR hidden_at IS NOT NULL`) was called not-usable, and the fix
        // line sent the developer to rewrite SQL that is fine.
        let mut c = copy(alone_refused());
        c.together = Some(TogetherPlans {
            tried: vec!["events_account".into(), "events_hidden".into()],
            disabled: vec!["enable_seqscan".into(), "enable_indexscan".into()],
            found: Some((
                "events_hidden".into(),
                plan(bitmap_or(&["events_live", "events_hidden"])),
            )),
        });
        let u = judge(
            &index(Some("(read_at IS NOT NULL)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_eq!(
            u.verdict.verdict,
            Verdict::NotChosen,
            "{}",
            u.verdict.message
        );
        assert_eq!(u.usable, Some(true));
        assert_eq!(u.settled_by, Some(Settled::Scratch));
        assert_eq!(u.shown, Some(Shown::Together));
        let m = &u.verdict.message;
        assert!(
            m.contains(
                "usable together with events_hidden in a BitmapOr (events_live, events_hidden)"
            ),
            "{m}"
        );
        assert!(
            m.contains("Seq Scan on events (disabled, chosen anyway)"),
            "{m}"
        );
    }

    #[test]
    fn an_index_that_serves_beside_no_sibling_is_still_not_usable_and_says_which_were_tried() {
        let mut c = copy(alone_refused());
        c.together = Some(TogetherPlans {
            tried: vec!["events_account".into(), "events_pkey".into()],
            disabled: vec!["enable_seqscan".into(), "enable_indexscan".into()],
            found: None,
        });
        let u = judge(
            &index(Some("(kind <> 'x'::text)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_eq!(u.verdict.verdict, Verdict::NotUsable);
        assert_eq!(u.usable, Some(false));
        let m = &u.verdict.message;
        assert!(
            m.contains("kept with each in turn (events_account, events_pkey)"),
            "{m}"
        );
    }

    #[test]
    fn without_a_copy_an_or_in_the_conditions_never_settles_not_usable_by_rule() {
        // Regression: the rule "an OR admits rows the predicate leaves out" called a partial
        // index not usable, where it serves one arm of the OR beside its sibling (BitmapOr).
        let chosen = plan(
            json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "events",
            "Schema": "public", "Total Cost": 100.0,
            "Filter": "((events.read_at IS NOT NULL) OR (events.hidden_at IS NOT NULL))" } }]),
        );
        let probes = [ProbePlan {
            disabled: vec!["enable_seqscan".into()],
            dropped: vec![],
            plan: chosen.clone(),
        }];
        let u = judge(
            &index(Some("(read_at IS NOT NULL)")),
            &probes,
            Scratch::NotMade("no local PostgreSQL 17"),
        );
        assert_ne!(
            u.verdict.verdict,
            Verdict::NotUsable,
            "{}",
            u.verdict.message
        );
        assert_eq!(u.usable, None, "{}", u.verdict.message);
        assert!(
            u.verdict.message.contains("BitmapOr"),
            "{}",
            u.verdict.message
        );
    }

    #[test]
    fn a_together_plan_that_does_not_read_the_index_proves_nothing() {
        // A re-plan recorded as found whose plan does not read the index (a saved measurement
        // edited by hand, a leaf renamed): not a usable.
        let mut c = copy(alone_refused());
        c.together = Some(TogetherPlans {
            tried: vec!["events_hidden".into()],
            disabled: vec!["enable_seqscan".into()],
            found: Some(("events_hidden".into(), plan(bitmap_or(&["events_hidden"])))),
        });
        let u = judge(
            &index(Some("(read_at IS NOT NULL)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_ne!(u.usable, Some(true), "{}", u.verdict.message);
    }

    fn probe(doc: Value) -> ProbePlan {
        ProbePlan {
            disabled: vec!["enable_seqscan".into()],
            dropped: vec![],
            plan: plan(doc),
        }
    }

    /// The usability of `index` for a chosen plan through the rival `events_account`.
    fn judge(index: &RequiredIndex, probes: &[ProbePlan], scratch: Scratch<'_>) -> Usability {
        let chosen = plan(scan(
            Some("events_account"),
            Some("(events.account_id = 42)"),
        ));
        let reltuples = HashMap::new();
        let rules = Rules {
            index,
            allow_seq_scan: &[],
            reltuples: &reltuples,
            large_rows: 10_000.0,
        };
        judge_usability(
            judge_plan(&chosen, &rules),
            &chosen,
            probes,
            scratch,
            &rules,
            &[],
        )
    }

    #[test]
    fn the_index_in_the_scratch_plan_is_usable_and_says_where_that_was_shown() {
        let c = copy(scan(Some("events_live"), Some("(events.account_id = 42)")));
        let u = judge(
            &index(Some("(kind <> 'x'::text)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_eq!(u.verdict.verdict, Verdict::NotChosen);
        assert_eq!(u.usable, Some(true));
        assert_eq!(u.settled_by, Some(Settled::Scratch));
        assert_eq!(u.shown, Some(Shown::Scratch));
        let m = &u.verdict.message;
        assert!(m.contains("schema-only copy on PostgreSQL 15"), "{m}");
        assert!(m.contains("Index Cond: (events.account_id = 42)"), "{m}");
        assert!(m.contains("the plan has no Sort"), "{m}");
    }

    #[test]
    fn no_plan_through_the_index_on_the_scratch_copy_is_not_usable() {
        let mut seq = scan(None, None);
        seq[0]["Plan"]["Total Cost"] = json!(1.0e10 + 100.0);
        let c = copy(seq);
        let u = judge(
            &index(Some("(kind <> 'x'::text)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_eq!(u.verdict.verdict, Verdict::NotUsable);
        assert_eq!(u.usable, Some(false));
        assert_eq!(u.settled_by, Some(Settled::Scratch));
        let m = &u.verdict.message;
        assert!(m.contains("every other index on events dropped (events_account, events_pkey)"));
        assert!(
            m.contains("Seq Scan on events (disabled, chosen anyway)"),
            "{m}"
        );
        assert!(m.contains("never through events_live"), "{m}");
        assert!(m.contains("Its predicate (kind <> 'x'::text)"), "{m}");
    }

    #[test]
    fn the_scratch_copy_outranks_a_rule_that_says_otherwise() {
        // The text rule finds no condition on `kind` in the chosen plan (not implied); the
        // planner, alone with the index, used it: the planner is right.
        let c = copy(scan(Some("events_live"), None));
        let u = judge(
            &index(Some("(kind = 'a'::text)")),
            &[],
            Scratch::Planned(&c),
        );
        assert_eq!(u.usable, Some(true), "{}", u.verdict.message);
        assert_eq!(u.settled_by, Some(Settled::Scratch));
        assert!(
            u.verdict
                .message
                .contains("no Index Cond: the index is walked in its order"),
            "{}",
            u.verdict.message
        );
    }

    #[test]
    fn a_re_plan_on_the_measured_server_that_read_the_index_settles_it_with_costs() {
        let probes = [probe(scan(
            Some("events_live"),
            Some("(events.account_id = 42)"),
        ))];
        let c = copy(scan(None, None));
        let u = judge(&index(None), &probes, Scratch::Planned(&c));
        assert_eq!(u.usable, Some(true));
        assert_eq!(u.settled_by, Some(Settled::Replan));
        assert_eq!(u.shown, Some(Shown::Probe(0)));
        assert!(
            u.verdict.message.contains("costs 8.00"),
            "{}",
            u.verdict.message
        );
    }

    /// The chosen plan (events_account) costs 8.00; a re-plan reads events_live at 20.00.
    fn costs_with(disabled: &[&str], dropped: &[&str], doc: Value) -> String {
        let probes = [ProbePlan {
            disabled: disabled.iter().map(|d| d.to_string()).collect(),
            dropped: dropped.iter().map(|d| d.to_string()).collect(),
            plan: plan(doc),
        }];
        let u = judge(&index(None), &probes, Scratch::Absent);
        assert_eq!(u.usable, Some(true), "{}", u.verdict.message);
        u.verdict.message
    }

    fn through_live(cost: f64) -> Value {
        let mut doc = scan(Some("events_live"), Some("(events.account_id = 42)"));
        doc[0]["Plan"]["Total Cost"] = json!(cost);
        doc
    }

    /// events_live's scan joined to a seq scan of accounts, nothing disabled in the plan.
    fn joined(cost: f64) -> Value {
        let live = scan(Some("events_live"), Some("(events.account_id = 42)"));
        json!([{ "Plan": { "Node Type": "Nested Loop", "Total Cost": cost,
            "Plans": [live[0]["Plan"].clone(),
                      { "Node Type": "Index Scan", "Index Name": "accounts_pkey",
                        "Relation Name": "accounts", "Schema": "public", "Total Cost": 4.0 }] } }])
    }

    #[test]
    fn a_ratio_is_given_only_from_the_planner_s_own_best_plan_through_the_index() {
        // Seq scans off, one relation: the index's own paths were all open; its cost is the
        // planner's best plan through it, and the ratio is stated.
        let m = costs_with(&["enable_seqscan"], &[], through_live(20.0));
        assert!(m.contains("costs 20.00 (2.5×; found with"), "{m}");
        // The winner set aside, one relation: the planner's own plan through the index.
        let m = costs_with(&[], &["events_account"], through_live(20.0));
        assert!(
            m.contains("the planner's own plan through events_live costs 20.00 (2.5×)"),
            "{m}"
        );
    }

    #[test]
    fn a_cost_that_is_only_an_upper_bound_is_never_given_as_a_ratio() {
        // Regression: "a plan using X costs at most 10,863 (230.9×)" where PostgreSQL's plan
        // through X, the winner dropped, cost 1.25× the chosen one.
        let cases: [(&[&str], &[&str], Value, &str); 4] = [
            (
                &["enable_seqscan", "enable_bitmapscan"],
                &[],
                through_live(20.0),
                "found with enable_seqscan = off and with enable_bitmapscan = off, which may \
                 rule out the index's own cheapest path; --explain",
            ),
            (
                &["enable_seqscan"],
                &[],
                joined(20.0),
                "found with enable_seqscan = off on every relation the plan reads, which may",
            ),
            (
                &["enable_seqscan"],
                &["events_account"],
                joined(20.0),
                "with events_account set aside and enable_seqscan = off (a seq scan was cheaper \
                 still) in a rolled-back transaction (--replan-without-rivals), a plan through \
                 events_live costs at most 20.00 (an upper bound, so no ratio: that setting is \
                 off on every relation the plan reads, which may",
            ),
            (
                &["enable_hashjoin"],
                &[],
                through_live(20.0),
                "found with enable_hashjoin = off, which may rule out a path",
            ),
        ];
        for (disabled, dropped, doc, why) in cases {
            let m = costs_with(disabled, dropped, doc);
            assert!(!m.contains('×'), "a ratio from an upper bound: {m}");
            assert!(
                m.contains("costs at most 20.00 (an upper bound, so no ratio"),
                "{m}"
            );
            assert!(m.contains(why), "{m}");
        }
    }

    #[test]
    fn the_bound_names_each_disabled_setting_once() {
        // Regression: "an upper bound, so no ratio: found with enable_seqscan = off,
        // enable_bitmapscan = off, enable_bitmapscan off, which may rule out …".
        for (disabled, dropped, doc) in [
            (
                &["enable_seqscan", "enable_bitmapscan"][..],
                &[][..],
                through_live(20.0),
            ),
            (&["enable_bitmapscan"], &[], through_live(20.0)),
            (
                &["enable_seqscan", "enable_hashjoin"],
                &[],
                through_live(20.0),
            ),
            (&["enable_seqscan"], &[], joined(20.0)),
            (&["enable_seqscan"], &["events_account"], joined(20.0)),
        ] {
            let m = costs_with(disabled, dropped, doc);
            // The costs' sentence, from its first figure to its end.
            let costs = m
                .split_once("the chosen plan costs")
                .map(|(_, costs)| costs)
                .unwrap_or_else(|| panic!("no costs in {m}"));
            let costs = costs.split(". ").next().unwrap();
            assert!(costs.contains("an upper bound, so no ratio"), "{m}");
            for setting in disabled {
                assert_eq!(costs.matches(setting).count(), 1, "{setting}: {costs}");
            }
        }
        let m = costs_with(
            &["enable_seqscan", "enable_hashjoin"],
            &[],
            through_live(20.0),
        );
        assert!(
            m.contains(
                "found with enable_seqscan = off and with enable_hashjoin = off, which may rule \
                 out a path of the cheapest plan through the index;"
            ),
            "{m}"
        );
    }

    #[test]
    fn without_a_scratch_plan_a_full_index_is_not_settled_and_says_why() {
        // Regression: a full index whose re-plans all read another index was called not usable
        // "even with seq scans disabled", and a second accepted index got that claim with no
        // re-plan made at all.
        let probes = [probe(scan(
            Some("events_account"),
            Some("(events.account_id = 42)"),
        ))];
        let why = "no local PostgreSQL 16 to re-plan on; install it or set PLANCHECK_PG_BIN";
        let u = judge(&index(None), &probes, Scratch::NotMade(why));
        assert_eq!(u.verdict.verdict, Verdict::NotChosen);
        assert_eq!(u.usable, None);
        assert_eq!(u.settled_by, None);
        assert_eq!(u.unsettled.as_deref(), Some(why));
        assert!(u.verdict.message.contains(why), "{}", u.verdict.message);
        let u = judge(&index(None), &[], Scratch::Absent);
        assert_eq!(u.usable, None);
        assert!(
            u.verdict.message.contains("no re-plan was made"),
            "{}",
            u.verdict.message
        );
    }

    #[test]
    fn what_the_re_plans_read_is_said_per_re_plan_unless_they_all_agree() {
        // Regression: "X was chosen instead in every re-plan" where the re-plans had other
        // winners.
        let mut second = probe(scan(Some("events_other"), None));
        second.disabled = vec!["enable_seqscan".into(), "enable_bitmapscan".into()];
        let probes = [
            probe(scan(
                Some("events_account"),
                Some("(events.account_id = 42)"),
            )),
            second,
        ];
        let u = judge(&index(None), &probes, Scratch::Absent);
        let m = &u.verdict.message;
        assert!(!m.contains("every re-plan"), "{m}");
        assert!(
            m.contains("with enable_seqscan = off, by Index Scan using events_account"),
            "{m}"
        );
        assert!(m.contains("by Index Scan using events_other"), "{m}");
        let same = [
            probe(scan(Some("events_account"), None)),
            probe(scan(Some("events_account"), None)),
        ];
        let u = judge(&index(None), &same, Scratch::Absent);
        assert!(
            u.verdict.message.contains(
                "events_account was chosen instead in every re-plan on the measured \
                           server (2)"
            ),
            "{}",
            u.verdict.message
        );
    }

    #[test]
    fn a_sort_in_the_plan_through_the_index_is_said_from_the_plan() {
        let doc = json!([{ "Plan": { "Node Type": "Sort", "Sort Key": ["events.created_at DESC"],
            "Plans": [{ "Node Type": "Index Scan", "Index Name": "events_live",
                        "Relation Name": "events", "Schema": "public",
                        "Index Cond": "(events.account_id = 42)" }] } }]);
        let text = through(&plan(doc), &index(None)).unwrap();
        assert!(
            text.contains("the plan sorts (Sort: events.created_at DESC)"),
            "{text}"
        );
        assert!(through(&plan(scan(None, None)), &index(None)).is_none());
    }

    #[test]
    fn a_rule_settles_a_partial_index_only_where_no_scratch_plan_was_made() {
        let chosen_has_no_kind = index(Some("(kind = 'b'::text)"));
        let u = judge(&chosen_has_no_kind, &[], Scratch::NotMade("--no-scratch"));
        assert_eq!(u.verdict.verdict, Verdict::NotUsable);
        assert_eq!(u.settled_by, Some(Settled::Rule));
        assert!(
            u.verdict.message.contains("--no-scratch"),
            "{}",
            u.verdict.message
        );
    }
}

#[cfg(test)]
mod through_the_judge {
    use serde_json::json;

    use super::*;
    use std::collections::HashMap;

    use crate::verdict::Judging;
    use crate::verdict::plan::judge_plan;
    use crate::verdict::test_support::*;

    #[test]
    fn no_probe_plan_with_the_index_is_not_usable() {
        let v = judge_with_probes(
            seq_scan_plan(100.0),
            vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
                "Index Name": "posts_thread_all_idx", "Relation Name": "posts",
                "Schema": "public", "Total Cost": 300.0 }}]))],
        );
        assert_eq!(v.verdict, Verdict::NotUsable, "{v:?}");
    }

    #[test]
    fn a_disabled_seq_scan_that_still_won_is_not_a_usable_index() {
        // PostgreSQL 18 shape: the probe's seq scan is marked Disabled and is all there is.
        let mut pg18 = seq_scan_plan(100.0);
        pg18[0]["Plan"]["Disabled"] = json!(true);
        let v = judge_with_probes(seq_scan_plan(100.0), vec![probe(pg18)]);
        assert_eq!(v.verdict, Verdict::NotUsable);
        // PostgreSQL 15 shape: the same, priced at 1e10.
        let v = judge_with_probes(
            seq_scan_plan(100.0),
            vec![probe(seq_scan_plan(1.0e10 + 100.0))],
        );
        assert_eq!(v.verdict, Verdict::NotUsable);
    }

    #[test]
    fn a_probe_plan_with_the_index_is_not_chosen_with_both_costs() {
        let v = judge_with_probes(
            seq_scan_plan(1.5),
            vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
                "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
                "Schema": "public", "Total Cost": 8.27 }}]))],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert!(v.message.contains("costs 1.50"), "{}", v.message);
        assert!(v.message.contains("costs 8.27"), "{}", v.message);
    }

    #[test]
    fn a_full_index_beaten_by_a_rival_in_every_probe_stays_not_chosen() {
        let doc = seq_scan_plan(100.0);
        let plan = Explain::from_json(&doc).unwrap();
        let mut index = required();
        index.name = "posts_thread_all_idx".into();
        index.predicate = None;
        let reltuples = HashMap::new();
        let rules = Rules {
            index: &index,
            allow_seq_scan: &[],
            reltuples: &reltuples,
            large_rows: Judging::default().large_rows,
        };
        let probes = vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
            "Schema": "public", "Total Cost": 8.0 }}]))];
        let v = judge_usability(
            judge_plan(&plan, &rules),
            &plan,
            &probes,
            Scratch::Absent,
            &rules,
            &[],
        )
        .verdict;
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
        assert!(v.message.contains("not settled"), "{}", v.message);
    }

    #[test]
    fn an_implied_predicate_with_no_plan_through_the_index_is_not_called_usable() {
        let chosen = json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
            "Schema": "public", "Total Cost": 100.0,
            "Filter": "((visibility = 'visible'::text) AND (thread_id = 1))" }}]);
        let mut probe_doc = seq_scan_plan(1.0e10 + 100.0);
        probe_doc[0]["Plan"]["Filter"] = json!("((visibility = 'visible'::text))");
        let v = judge_with_probes(chosen, vec![probe(probe_doc)]);
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
        assert!(v.message.contains("is not settled"), "{}", v.message);
        assert!(!v.message.contains("is usable"), "{}", v.message);
    }

    #[test]
    fn usability_leaves_other_verdicts_alone() {
        let doc = json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]);
        let v = judge_with_probes(doc, vec![]);
        assert_eq!(v.verdict, Verdict::Pass);
    }
}
