//! `not-usable` or `not-chosen`: when the required index is not in the plan, whether any plan
//! can use it. Each answer needs a proof, and where there is none the check says so.
//!
//! - **Usable** (`not-chosen`) when a re-plan with scan types disabled used the index, or when
//!   every conjunct of a partial index's predicate is implied by one of the conditions the
//!   plans applied to its table (a sibling partial index the planner used counts: the planner
//!   proved its predicate).
//! - **Not usable** (`not-usable`) when a rule in [`super::predicate`] shows a conjunct of the
//!   predicate cannot be implied (no condition on its column, a parameter, an IN list or a
//!   range wider than the predicate's, `<>` against `=`, a cast), or when every re-plan read
//!   the table with nothing but disabled scan types (no other index could have won).
//! - **Not settled** otherwise (another index won every re-plan and no rule decides):
//!   `not-chosen` with `usable` unknown, which `--require usable` does not forgive.
//!
//! Up to PostgreSQL 17 a disabled path costs 1e10 more: a probe plan that still holds one has a
//! cost that cannot be compared, and is said so. PostgreSQL 18 marks such nodes `Disabled`.
//! Either way the index is found by name, never inferred from a cost.

use super::plan::{DISABLED_COST, PlanVerdict, Rules, is_required_index};
use super::predicate::{Conjunct, cannot_imply, implies, mentions};
use super::{RequiredIndex, Verdict, keys};
use crate::explain::Explain;

/// A plan made while probing whether the required index can serve the statement at all: the
/// same statement re-planned (without running it) with sequential scans and, rung by rung,
/// competing scan types disabled.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The settings turned off: `enable_seqscan`, ….
    pub disabled: Vec<String>,
    /// The rival indexes set aside (`--replan-without-rivals`), if any.
    pub dropped: Vec<String>,
    pub plan: Explain,
}

/// The answer, with which probe (if any) showed a plan through the index.
#[derive(Debug, Clone)]
pub struct Usability {
    pub verdict: PlanVerdict,
    /// `Some(true)`: proved usable; `Some(false)`: proved not; `None`: not settled.
    pub usable: Option<bool>,
    /// The probe whose plan used the index, for `--explain`.
    pub shown: Option<usize>,
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
    probes: &[Probe],
    rules: &Rules<'_>,
    non_immutable: &[String],
) -> Usability {
    if verdict.verdict != Verdict::NotChosen {
        return Usability {
            verdict,
            usable: None,
            shown: None,
        };
    }
    let ev = Evidence::gather(chosen, probes, rules.index);
    if let Some(i) = ev.found {
        let probe = &probes[i];
        let name = &rules.index.name;
        return Usability {
            verdict: PlanVerdict {
                message: format!(
                    "{}. {name} is usable (a re-plan with {} used it), but at these statistics \
                     the planner preferred another plan: {}.{}",
                    verdict.message,
                    how_found(probe),
                    costs(chosen, probe, name),
                    ev.keys
                ),
                ..verdict
            },
            usable: Some(true),
            shown: Some(i),
        };
    }
    match rules.index.predicate.as_deref() {
        None => full_index(verdict, &ev),
        Some(predicate) => partial_index(verdict, predicate, &ev, non_immutable),
    }
}

const TRIED: &str = "even with seq scans and, in turn, each competing scan type disabled";

/// What the plans (the chosen one and the re-plans) show about the required index's table.
struct Evidence<'a> {
    index: &'a RequiredIndex,
    /// The re-plan that used the index, if one did.
    found: Option<usize>,
    /// The other indexes the plans used on the table, in order of first use.
    rivals: Vec<String>,
    /// What the plans show to hold on the table: its conditions, and the predicates of the
    /// partial indexes the planner used on it (it proved them, and prints no condition they
    /// imply).
    known: Vec<Conjunct>,
    /// What of the index the query can use, as a sentence (with a leading space), or empty.
    keys: String,
    /// The chosen plan's conditions on the table, as printed, for the message.
    shown_conditions: String,
    /// With rivals set aside and seq scans disabled, no plan read the table through any index.
    set_aside_proof: Option<String>,
}

impl<'a> Evidence<'a> {
    // Long because each piece of evidence is read from every plan in turn: the re-plan that found the index, rivals, known conditions, keys, the set-aside proof.
    fn gather(chosen: &Explain, probes: &[Probe], index: &'a RequiredIndex) -> Evidence<'a> {
        // A partitioned table is read through its partitions: their scans hold the conditions.
        let tables: Vec<&str> = std::iter::once(index.table.as_str())
            .chain(index.partitions.iter().map(|p| p.table.as_str()))
            .collect();
        let leaves: Vec<&str> = index
            .partitions
            .iter()
            .filter_map(|p| p.leaf_index.as_deref())
            .collect();
        let found = probes.iter().position(|p| {
            p.plan.scans().iter().any(|s| {
                is_required_index(s, index)
                    || (s.kind.uses_index()
                        && s.node
                            .index_name
                            .as_deref()
                            .is_some_and(|n| leaves.contains(&n)))
            })
        });
        let plans: Vec<&Explain> = std::iter::once(chosen)
            .chain(probes.iter().map(|p| &p.plan))
            .collect();
        let mut rivals: Vec<String> = Vec::new();
        for plan in &plans {
            for s in plan.scans() {
                if s.kind.uses_index()
                    && s.relation.is_some_and(|r| tables.contains(&r))
                    && let Some(n) = &s.node.index_name
                    && n != &index.name
                    && !leaves.contains(&n.as_str())
                    && !rivals.contains(n)
                {
                    rivals.push(n.clone());
                }
            }
        }
        let mut known: Vec<Conjunct> = Vec::new();
        for plan in &plans {
            for t in &tables {
                for c in plan.conditions_on(t) {
                    known.extend(index.conjuncts(&c));
                }
            }
        }
        for rival in &rivals {
            if let Some(p) = index
                .siblings
                .iter()
                .find(|s| &s.name == rival)
                .and_then(|s| s.predicate.as_deref())
            {
                known.extend(index.conjuncts(p));
            }
        }
        let keys = keys::summary(index, &known, chosen)
            .map(|k| format!(" {k}"))
            .unwrap_or_default();
        let mut shown: Vec<String> = Vec::new();
        for t in &tables {
            for c in chosen.conditions_on(t) {
                if !shown.contains(&c) {
                    shown.push(c);
                }
            }
        }
        let shown_conditions = if shown.is_empty() {
            "none".to_string()
        } else {
            shown.join(", ")
        };
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
                    "with {} set aside and {} (in a rolled-back transaction, \
                     --replan-without-rivals), no plan reads {} through any index",
                    p.dropped.join(", "),
                    off(&p.disabled),
                    index.table
                )
            });
        Evidence {
            index,
            found,
            rivals,
            known,
            keys,
            shown_conditions,
            set_aside_proof,
        }
    }

    /// `rival was chosen instead in every re-plan`, saying "(same predicate)" when asked and so.
    fn rival_text(&self, same: bool) -> String {
        let Some(r) = self.rivals.first() else {
            return "no plan used it".into();
        };
        let same_predicate = self.index.predicate.is_some()
            && self
                .index
                .siblings
                .iter()
                .find(|s| &s.name == r)
                .is_some_and(|s| s.predicate == self.index.predicate);
        let note = if same && same_predicate {
            " (same predicate)"
        } else {
            ""
        };
        format!("{r}{note} was chosen instead in every re-plan")
    }
}

/// A full index: usable by predicate, but only a re-plan can show it serves the SQL.
fn full_index(verdict: PlanVerdict, ev: &Evidence<'_>) -> Usability {
    let (name, keys) = (&ev.index.name, &ev.keys);
    if let Some(proof) = &ev.set_aside_proof {
        return not_usable(
            verdict,
            format!("{name} cannot serve this SQL: {proof}.{keys}"),
        );
    }
    if ev.rivals.is_empty() {
        return not_usable(
            verdict,
            format!(
                "{name} cannot serve this SQL: no plan uses it {TRIED}, and no other index was \
                 chosen in its place.{keys}"
            ),
        );
    }
    not_settled(
        verdict,
        format!(
            "{} ({TRIED}), so whether {name} can serve this SQL at all is not settled.{keys}",
            ev.rival_text(false)
        ),
    )
}

/// A partial index: implied (usable), disproved by a rule or a re-plan (not usable), or neither.
// Long because it is the outcomes in their order of proof, each with its own message: implied
// (with or without a rival), disproved by a rule, by the rivals set aside, by no rival at all,
// then not settled.
fn partial_index(
    verdict: PlanVerdict,
    predicate: &str,
    ev: &Evidence<'_>,
    non_immutable: &[String],
) -> Usability {
    let index = ev.index;
    let (name, table, keys) = (&index.name, &index.table, &ev.keys);
    let wanted = index.conjuncts(predicate);
    let unproved: Vec<&Conjunct> = wanted
        .iter()
        .filter(|p| !ev.known.iter().any(|c| implies(c, p)))
        .collect();
    if unproved.is_empty() {
        if ev.rivals.is_empty() {
            // Implied, yet no plan used it and nothing else was chosen: not proved either way.
            return not_settled(
                verdict,
                format!(
                    "its predicate {predicate} is implied by the conditions on {table}, yet no \
                     plan used {name} {TRIED}, and no other index was chosen in its place; \
                     whether the planner can build a path through it is not settled.{keys}"
                ),
            );
        }
        let how = {
            format!(
                "but {}, and disabling scan types cannot set aside an index of the same scan \
                 type, so its cost was not measured (--replan-without-rivals measures it, on a \
                 database that is yours)",
                ev.rival_text(true)
            )
        };
        return Usability {
            verdict: PlanVerdict {
                message: format!(
                    "{}. {name} is usable: its predicate {predicate} is implied by the \
                     conditions on {table}, {how}.{keys}",
                    verdict.message
                ),
                ..verdict
            },
            usable: Some(true),
            shown: None,
        };
    }
    let conditions = &ev.shown_conditions;
    let not_implied = format!(
        "its predicate {predicate} is not implied by the conditions on {table} ({conditions})"
    );
    if let Some(cause) = causes(&unproved, &ev.known, non_immutable).first() {
        let also = ev
            .set_aside_proof
            .as_ref()
            .map(|p| format!(" And {p}."))
            .unwrap_or_default();
        return not_usable(
            verdict,
            format!("{name} cannot serve this SQL: {not_implied}. Cause: {cause}.{also}{keys}"),
        );
    }
    if let Some(proof) = &ev.set_aside_proof {
        return not_usable(
            verdict,
            format!("{name} cannot serve this SQL: {proof}; {not_implied}.{keys}"),
        );
    }
    if ev.rivals.is_empty() {
        return not_usable(
            verdict,
            format!(
                "{name} cannot serve this SQL: no plan uses it {TRIED}, and no other index was \
                 chosen in its place; {not_implied}.{keys}"
            ),
        );
    }
    not_settled(
        verdict,
        format!(
            "{} ({TRIED}), and whether the conditions on {table} ({conditions}) imply its \
             predicate {predicate} is not settled by the plans.{keys}",
            ev.rival_text(false)
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

/// What a re-plan changed, as a reader would write it.
fn how_found(probe: &Probe) -> String {
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

fn not_usable(verdict: PlanVerdict, why: String) -> Usability {
    Usability {
        verdict: PlanVerdict {
            verdict: Verdict::NotUsable,
            message: format!("{why} {}", verdict.message),
            ..verdict
        },
        usable: Some(false),
        shown: None,
    }
}

fn not_settled(verdict: PlanVerdict, why: String) -> Usability {
    Usability {
        verdict: PlanVerdict {
            message: format!("{}. Usability not settled: {why}", verdict.message),
            ..verdict
        },
        usable: None,
        shown: None,
    }
}

/// The two costs, and what the second one is worth: the cheapest plan through the index the
/// planner could be made to show is an upper bound when whole scan types were disabled to find
/// it (they may include the index's own cheapest path).
fn costs(chosen: &Explain, probe: &Probe, name: &str) -> String {
    let chosen_cost = chosen.root.total_cost;
    let index_cost = probe.plan.root.total_cost;
    if !probe.dropped.is_empty() {
        let ratio = if chosen_cost > 0.0 {
            index_cost / chosen_cost
        } else {
            f64::INFINITY
        };
        let aside = probe.dropped.join(", ");
        let seq = if probe.disabled.is_empty() {
            String::new()
        } else {
            format!(
                " and {} (a seq scan was cheaper still)",
                off(&probe.disabled)
            )
        };
        return format!(
            "the chosen plan costs {chosen_cost:.2}; with {aside} set aside{seq} in a rolled-back \
             transaction (--replan-without-rivals), the planner's own plan through {name} costs \
             {index_cost:.2} ({ratio:.1}×)"
        );
    }
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
    let ratio = if chosen_cost > 0.0 {
        index_cost / chosen_cost
    } else {
        f64::INFINITY
    };
    if probe.disabled.len() > 1 {
        format!(
            "the chosen plan costs {chosen_cost:.2}; a plan using {name} costs at most \
             {index_cost:.2} ({ratio:.1}×, an upper bound: found with {} — whole scan types \
             disabled, which may include {name}'s own cheapest path; --explain shows that plan)",
            off(&probe.disabled)
        )
    } else {
        format!(
            "the chosen plan costs {chosen_cost:.2}, a plan using {name} costs {index_cost:.2} \
             ({ratio:.1}×; found with {})",
            off(&probe.disabled)
        )
    }
}
