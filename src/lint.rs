//! lint: twin drift. A partial index one scope requires and the unfiltered twin another scope
//! of the same read path requires must stay twins: same table, same access method, same key
//! columns in the same order, the twin without a predicate, both valid and ready. Pure: the
//! catalog facts come in, findings go out.

use serde::Serialize;

pub use crate::model::IndexInfo;

/// The indexes one read path requires, by scope, as the catalog found them (`None`: missing).
#[derive(Debug, Clone)]
pub struct ReadPathIndexes {
    pub read_path: String,
    pub required: Vec<(String, String, Option<IndexInfo>)>,
    /// Why the catalog could not be read for this read path (a lock timeout), if it could not.
    pub unchecked: Option<String>,
}

/// What kind of problem a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A required index does not exist (the check's `missing-index` says so too).
    Missing,
    /// A required index is not valid or not ready.
    Invalid,
    /// A partial index and its twin drifted apart.
    TwinDrift,
    /// The catalog could not be read for the read path (another session's lock).
    Unchecked,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub read_path: String,
    /// The partial index, or the index the finding is about.
    pub index: String,
    /// Its twin, when the finding is about a pair.
    pub twin: Option<String>,
    pub problem: String,
    /// The definitions involved, side by side.
    pub definitions: Vec<String>,
}

/// Lints every read path: each required index valid and ready, and each partial index with its
/// twin (a full index another scope of the same read path requires on the same table).
pub fn lint(read_paths: &[ReadPathIndexes]) -> Vec<Finding> {
    let mut out = Vec::new();
    for rp in read_paths {
        if let Some(why) = &rp.unchecked {
            out.push(Finding {
                kind: Kind::Unchecked,
                read_path: rp.read_path.clone(),
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
                    index: wanted.clone(),
                    twin: None,
                    problem: format!("index {wanted} (required in scope `{scope}`) does not exist"),
                    definitions: vec![],
                }),
                Some(i) if !i.valid || !i.ready => out.push(Finding {
                    kind: Kind::Invalid,
                    read_path: rp.read_path.clone(),
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
                }),
                Some(_) => {}
            }
        }
        let present: Vec<&IndexInfo> = rp
            .required
            .iter()
            .filter_map(|(_, _, i)| i.as_ref())
            .collect();
        for partial in present.iter().filter(|i| i.predicate.is_some()) {
            let same_table = |t: &&&IndexInfo| {
                t.name != partial.name && t.table == partial.table && t.schema == partial.schema
            };
            // A twin that gained a predicate: same keys, but it no longer serves every row.
            for twin in present
                .iter()
                .filter(same_table)
                .filter(|t| t.predicate.is_some() && t.keys == partial.keys)
            {
                out.push(Finding {
                    kind: Kind::TwinDrift,
                    read_path: rp.read_path.clone(),
                    index: partial.name.clone(),
                    twin: Some(twin.name.clone()),
                    problem: format!(
                        "the twin {} of {} has a predicate {}: it must have none to serve \
                         every row",
                        twin.name,
                        partial.name,
                        twin.predicate.as_deref().unwrap_or_default()
                    ),
                    definitions: vec![partial.definition.clone(), twin.definition.clone()],
                });
            }
            for twin in present
                .iter()
                .filter(same_table)
                .filter(|t| t.predicate.is_none())
            {
                let mut problems = Vec::new();
                if twin.method != partial.method {
                    problems.push(format!(
                        "access methods differ ({} and {})",
                        partial.method, twin.method
                    ));
                }
                if twin.keys != partial.keys {
                    let same_set = {
                        let mut a = partial.keys.clone();
                        let mut b = twin.keys.clone();
                        a.sort();
                        b.sort();
                        a == b
                    };
                    problems.push(format!(
                        "key columns {}: ({}) and ({})",
                        if same_set {
                            "in a different order"
                        } else {
                            "differ"
                        },
                        partial.keys.join(", "),
                        twin.keys.join(", ")
                    ));
                }
                if !problems.is_empty() {
                    out.push(Finding {
                        kind: Kind::TwinDrift,
                        read_path: rp.read_path.clone(),
                        index: partial.name.clone(),
                        twin: Some(twin.name.clone()),
                        problem: format!(
                            "{} and its twin {} drifted: {}",
                            partial.name,
                            twin.name,
                            problems.join("; ")
                        ),
                        definitions: vec![partial.definition.clone(), twin.definition.clone()],
                    });
                }
            }
        }
    }
    out.dedup();
    out
}

/// Renders findings for a person: the problem, then the definitions one under the other.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!("{}: {}\n", f.read_path, f.problem));
        for d in &f.definitions {
            out.push_str(&format!("    {d}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn pair(partial: IndexInfo, twin: Option<IndexInfo>) -> Vec<Finding> {
        lint(&[ReadPathIndexes {
            read_path: "thread-page".into(),
            unchecked: None,
            required: vec![
                ("member".into(), partial.name.clone(), Some(partial)),
                ("moderator".into(), "posts_all".into(), twin),
            ],
        }])
    }

    #[test]
    fn twins_with_the_same_keys_are_clean() {
        let f = pair(
            index(
                "posts_visible",
                &["thread_id", "created_at"],
                Some("(visibility = 'visible')"),
            ),
            Some(index("posts_all", &["thread_id", "created_at"], None)),
        );
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn key_order_drift_is_found_with_both_definitions() {
        let f = pair(
            index(
                "posts_visible",
                &["thread_id", "created_at"],
                Some("(visibility = 'visible')"),
            ),
            Some(index("posts_all", &["created_at", "thread_id"], None)),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].problem.contains("in a different order"),
            "{}",
            f[0].problem
        );
        assert_eq!(f[0].definitions.len(), 2);
    }

    #[test]
    fn a_missing_twin_is_found() {
        let f = pair(
            index(
                "posts_visible",
                &["thread_id"],
                Some("(visibility = 'visible')"),
            ),
            None,
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].problem.contains("does not exist"), "{}", f[0].problem);
    }

    #[test]
    fn an_invalid_index_is_found() {
        let mut twin = index("posts_all", &["thread_id"], None);
        twin.valid = false;
        let f = pair(
            index(
                "posts_visible",
                &["thread_id"],
                Some("(visibility = 'visible')"),
            ),
            Some(twin),
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].problem.contains("not valid"), "{}", f[0].problem);
    }

    #[test]
    fn a_twin_with_a_predicate_is_not_a_twin_and_differing_methods_drift() {
        // Two partial indexes on other keys: no pair to compare.
        let f = pair(
            index(
                "posts_visible",
                &["thread_id"],
                Some("(visibility = 'visible')"),
            ),
            Some(index(
                "posts_all",
                &["created_at"],
                Some("(visibility <> 'deleted')"),
            )),
        );
        assert!(f.is_empty(), "{f:?}");
        // The twin, same keys, with a predicate: drift.
        let f = pair(
            index(
                "posts_visible",
                &["thread_id"],
                Some("(visibility = 'visible')"),
            ),
            Some(index(
                "posts_all",
                &["thread_id"],
                Some("(visibility <> 'deleted')"),
            )),
        );
        assert!(f[0].problem.contains("has a predicate"), "{f:?}");
        let mut twin = index("posts_all", &["thread_id"], None);
        twin.method = "hash".into();
        let f = pair(
            index(
                "posts_visible",
                &["thread_id"],
                Some("(visibility = 'visible')"),
            ),
            Some(twin),
        );
        assert!(f[0].problem.contains("access methods differ"), "{f:?}");
    }
}
