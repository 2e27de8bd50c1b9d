//! `--only` and `--scope`: the names checked against the project, and the project narrowed to
//! the checks they name, plus the checks those checks' relative budgets compare with.

use std::collections::{HashMap, HashSet};

use super::{Filter, ReadPath};
use crate::error::BadInput;

/// Every `--only` names a read path and every `--scope` a scope of the project (`names` are
/// the read paths' names, `scope_names` every scope declared anywhere).
pub(super) fn check_names(
    filter: &Filter,
    read_paths: &[ReadPath],
    names: &[String],
    scope_names: &[String],
) -> Result<(), BadInput> {
    for only in &filter.only {
        if !read_paths.iter().any(|r| &r.name == only) {
            return Err(BadInput(format!(
                "--only {only}: no such read path (there are: {})",
                names.join(", ")
            )));
        }
    }
    for scope in &filter.scopes {
        if !scope_names.contains(scope) {
            return Err(BadInput(format!(
                "--scope {scope}: no such scope (there are: {})",
                scope_names.join(", ")
            )));
        }
    }
    Ok(())
}

/// `--partition`: one runner's share of a suite split across `n` runners, by read path × scope.
/// `slice:K/N` (or `K/N`) deals the checks, in name order, to the runners in turn: even shares,
/// which move when a check is added. `hash:K/N` places each check by a hash of its name: a
/// check stays on its runner whatever else is added, shares as even as the hash makes them. A
/// check whose relative budget compares with another goes where that other goes (the ratio
/// needs both sides): the partitions are disjoint and cover every check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub hash: bool,
    /// 1-based, at most `n`.
    pub k: u32,
    pub n: u32,
}

impl std::str::FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (hash, rest) = match text.split_once(':') {
            Some(("hash", rest)) => (true, rest),
            Some(("slice", rest)) => (false, rest),
            Some((kind, _)) => {
                return Err(format!(
                    "`{kind}` is not a way to split: slice:K/N or hash:K/N (or K/N, a slice)"
                ));
            }
            None => (false, text),
        };
        let bad = || format!("`{text}`: K/N, with 1 <= K <= N (the 2nd runner of 3: 2/3)");
        let (k, n) = rest.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Partition { hash, k, n })
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.hash { "hash" } else { "slice" };
        write!(f, "{kind}:{}/{}", self.k, self.n)
    }
}

/// FNV-1a, 64 bits: the same on every machine and every release (unlike std's hasher).
fn stable_hash(read_path: &str, scope: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in read_path.bytes().chain([0]).chain(scope.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The checks of `running` in `partition`: each placed by its group's root (the check its
/// relative budgets lead to, in the end), so a ratio's two sides stay together.
fn partitioned(
    read_paths: &[ReadPath],
    running: HashSet<(String, String)>,
    partition: Partition,
) -> HashSet<(String, String)> {
    let relative_of = relative_of(read_paths);
    let root = |check: &(String, String)| -> (String, String) {
        let mut at = (check.0.as_str(), check.1.as_str());
        let mut seen = HashSet::new();
        while seen.insert(at) {
            match relative_of.get(&at) {
                Some(&next) => at = next,
                None => break,
            }
        }
        (at.0.to_string(), at.1.to_string())
    };
    let roots: HashMap<(String, String), (String, String)> =
        running.iter().map(|c| (c.clone(), root(c))).collect();
    let mut distinct: Vec<&(String, String)> = roots.values().collect();
    distinct.sort();
    distinct.dedup();
    let n = u64::from(partition.n);
    let share = |r: &(String, String)| -> u64 {
        if partition.hash {
            stable_hash(&r.0, &r.1) % n
        } else {
            distinct.iter().position(|d| *d == r).unwrap_or(0) as u64 % n
        }
    };
    let mine = u64::from(partition.k - 1);
    running
        .into_iter()
        .filter(|c| share(&roots[c]) == mine)
        .collect()
}

/// The checks to run: those of the read paths and scopes the filter names, then the checks
/// their relative budgets compare with, even where --only or --scope leaves them out: a ratio
/// needs both sides; then this runner's share of them (`--partition`). A read path left with no
/// check is dropped.
pub(super) fn narrow(read_paths: Vec<ReadPath>, filter: &Filter) -> Vec<ReadPath> {
    let mut running = running(&read_paths, filter);
    if let Some(partition) = filter.partition {
        running = partitioned(&read_paths, running, partition);
    }
    read_paths
        .into_iter()
        .map(|mut r| {
            r.checks
                .retain(|c| running.contains(&(r.name.clone(), c.scope.clone())));
            r
        })
        .filter(|r| !r.checks.is_empty())
        .collect()
}

/// Each check's relative budget: (read path, scope) → the (read path, scope) it compares with.
fn relative_of(read_paths: &[ReadPath]) -> HashMap<(&str, &str), (&str, &str)> {
    read_paths
        .iter()
        .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
        .filter_map(|(r, c)| {
            let rel = c.budget.relative.as_ref()?;
            let scope = rel.scope.as_deref().unwrap_or(&c.scope);
            Some((
                (r.name.as_str(), c.scope.as_str()),
                (rel.to.as_str(), scope),
            ))
        })
        .collect()
}

/// The (read path, scope) of every check to run.
fn running(read_paths: &[ReadPath], filter: &Filter) -> HashSet<(String, String)> {
    let relative_of = relative_of(read_paths);
    let mut run: Vec<(&str, &str)> = read_paths
        .iter()
        .filter(|r| filter.only.is_empty() || filter.only.contains(&r.name))
        .flat_map(|r| r.checks.iter().map(|c| (r.name.as_str(), c.scope.as_str())))
        .filter(|(_, scope)| filter.scopes.is_empty() || filter.scopes.iter().any(|s| s == scope))
        .collect();
    let mut running: HashSet<(&str, &str)> = run.iter().copied().collect();
    let mut i = 0;
    while let Some(check) = run.get(i) {
        if let Some(&other) = relative_of.get(check)
            && running.insert(other)
        {
            run.push(other);
        }
        i += 1;
    }
    running
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn the_scope_a_relative_budget_compares_with_runs_under_another_scope_flag() {
        let runs = |relative: &str, only: &[&str]| {
            let filter = Filter {
                only: only.iter().map(|s| s.to_string()).collect(),
                scopes: vec!["member".into()],
                partition: None,
            };
            let p = load_relative(relative, &filter).unwrap();
            p.read_paths
                .iter()
                .flat_map(|r| r.checks.iter().map(|c| format!("{} [{}]", r.name, c.scope)))
                .collect::<Vec<_>>()
        };
        let to_all = "{ to = \"b\", scope = \"all\", max_ratio = 2 }";
        assert_eq!(runs(to_all, &[]), ["a [member]", "b [all]", "b [member]"]);
        assert_eq!(runs(to_all, &["a"]), ["a [member]", "b [all]"]);
        // Without `scope`: as before, the other read path in the same scope.
        assert_eq!(
            runs("{ to = \"b\", max_ratio = 2 }", &["a"]),
            ["a [member]", "b [member]"]
        );
    }

    /// Seven read paths `p0`..`p6` in scopes `member` and `moderator`; `p6 [member]` has a
    /// relative budget against `p0 [member]`.
    fn seven(partition: Option<Partition>) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = Vec::new();
        for i in 0..7 {
            let relative = if i == 6 {
                "relative = { to = \"p0\", max_ratio = 2 }\n"
            } else {
                ""
            };
            files.push((
                format!("expectations/p{i}.toml"),
                format!(
                    "[scopes.member]\nindex = \"i\"\n{relative}[scopes.moderator]\nindex = \"i\"\n"
                ),
            ));
            files.push((format!("plans/p{i}.sql"), format!("SELECT {i}")));
        }
        let files: Vec<(&str, String)> =
            files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
        let filter = Filter {
            partition,
            ..Filter::default()
        };
        let p = super::super::testing::load_files(&files, &filter).unwrap();
        let mut checks: Vec<(String, String)> = p
            .read_paths
            .iter()
            .flat_map(|r| r.checks.iter().map(|c| (r.name.clone(), c.scope.clone())))
            .collect();
        checks.sort();
        checks
    }

    #[test]
    fn partitions_are_disjoint_cover_every_check_and_keep_a_ratio_s_sides_together() {
        let all = seven(None);
        assert_eq!(all.len(), 14);
        for hash in [false, true] {
            for n in 1..=5 {
                let mut seen: Vec<(String, String)> = Vec::new();
                for k in 1..=n {
                    let part = seven(Some(Partition { hash, k, n }));
                    let has =
                        |c: (&str, &str)| part.iter().any(|p| (p.0.as_str(), p.1.as_str()) == c);
                    assert_eq!(
                        has(("p6", "member")),
                        has(("p0", "member")),
                        "hash {hash} {k}/{n}: {part:?}"
                    );
                    seen.extend(part);
                }
                seen.sort();
                assert_eq!(
                    seen, all,
                    "hash {hash}, {n} runners: each check exactly once"
                );
            }
        }
        // A slice deals evenly: 13 groups (p6 [member] goes with p0 [member]) over 3 runners.
        let sizes: Vec<usize> = (1..=3)
            .map(|k| {
                seven(Some(Partition {
                    hash: false,
                    k,
                    n: 3,
                }))
                .len()
            })
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), 14);
        assert!(sizes.iter().all(|s| (4..=6).contains(s)), "{sizes:?}");
    }

    #[test]
    fn a_partition_is_k_of_n_with_its_way_of_splitting() {
        let p = |t: &str| t.parse::<Partition>();
        assert_eq!(
            p("2/3"),
            Ok(Partition {
                hash: false,
                k: 2,
                n: 3
            })
        );
        assert_eq!(
            p("slice:1/1"),
            Ok(Partition {
                hash: false,
                k: 1,
                n: 1
            })
        );
        assert_eq!(
            p("hash:3/4"),
            Ok(Partition {
                hash: true,
                k: 3,
                n: 4
            })
        );
        assert_eq!(p("hash:3/4").unwrap().to_string(), "hash:3/4");
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(p(bad).unwrap_err().contains("K/N"), "{bad}");
        }
        assert!(
            p("count:1/2")
                .unwrap_err()
                .contains("`count` is not a way to split")
        );
    }
}
