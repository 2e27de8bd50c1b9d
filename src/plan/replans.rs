//! Which re-plans a check needs, decided from what was measured. The database side calls this to
//! know what to run; the judge calls it to know which questions were open, so that no message
//! claims a re-plan that was never made. Pure: plans in, decisions out.
//!
//! A question is open for a plan kind when the measured plans of that kind read none of the
//! indexes the scope accepts: the custom plan when any measured run reads none, and the generic
//! plan (a read path with parameters) when it reads none, each asked on its own: whether the
//! generic plan can use the index does not depend on the data, so it is asked whatever the
//! custom plan chose. Then, for every accepted index on its
//! own, the answer comes from, in order: a re-plan on the measured server with scan types
//! disabled (the rungs, cheap, EXPLAIN only), and, for each index no plan of that kind read, a
//! re-plan on a schema-only copy where that index is alone on its table ([`scratch_needed`]).

use crate::measure::{IndexLookup, Measured, PlanKind};
use crate::model::{Relation, index_and_leaves};
use crate::plan::explain::Explain;

/// An accepted index the catalog found: its name as reports show it, and every name a plan may
/// read it by (a partitioned index's leaves too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `name`, or `schema.name` outside the default schema.
    pub name: String,
    pub reads: Vec<String>,
}

impl Accepted {
    fn names(&self) -> Vec<&str> {
        self.reads.iter().map(String::as_str).collect()
    }

    /// Whether `plan` reads this index (any of its leaves counts).
    pub fn read_by(&self, plan: &Explain) -> bool {
        plan.reads_any(&self.names())
    }
}

/// The accepted indexes, in the scope's order, that a re-plan can ask about: found in the
/// catalog, and valid (an invalid index is its own verdict; a partitioned one missing a leaf is
/// the partition rule's, so it stays).
pub fn accepted(lookups: &[&IndexLookup]) -> Vec<Accepted> {
    lookups
        .iter()
        .filter_map(|lookup| match lookup {
            IndexLookup::Found(facts)
                if (facts.info.valid && facts.info.ready) || !facts.partitions.is_empty() =>
            {
                let i = &facts.info;
                Some(Accepted {
                    name: Relation::new(Some(&i.schema), &i.name).to_string(),
                    reads: index_and_leaves(&i.name, &facts.partitions)
                        .into_iter()
                        .map(str::to_string)
                        .collect(),
                })
            }
            _ => None,
        })
        .collect()
}

/// Every name of every accepted index.
fn all_names(accepted: &[Accepted]) -> Vec<&str> {
    accepted.iter().flat_map(Accepted::names).collect()
}

/// The plan kinds whose question is open: the custom plan when some measured run reads none of
/// the accepted indexes, and the generic plan when it reads none; empty when the plans read one
/// (or nothing is accepted that a re-plan could find).
pub fn open_plans(
    custom: &[&Explain],
    generic: Option<&Explain>,
    accepted: &[Accepted],
) -> Vec<PlanKind> {
    if accepted.is_empty() {
        return Vec::new();
    }
    let names = all_names(accepted);
    let mut open = Vec::new();
    if custom.iter().any(|p| !p.reads_any(&names)) {
        open.push(PlanKind::Custom);
    }
    if generic.is_some_and(|g| !g.reads_any(&names)) {
        open.push(PlanKind::Generic);
    }
    open
}

/// Whether the rungs of re-plans may stop: every accepted index has been read by one of `plans`.
pub fn every_one_seen(accepted: &[Accepted], plans: &[&Explain]) -> bool {
    accepted.iter().all(|a| plans.iter().any(|p| a.read_by(p)))
}

/// The (accepted index, plan kind) pairs that need a scratch re-plan: the open kind, for each
/// accepted index that no plan of that kind read, measured or re-planned on the measured server.
pub fn scratch_needed(
    accepted: &[Accepted],
    kind: PlanKind,
    shown: &[&Explain],
) -> Vec<(String, PlanKind)> {
    accepted
        .iter()
        .filter(|a| !shown.iter().any(|p| a.read_by(p)))
        .map(|a| (a.name.clone(), kind))
        .collect()
}

/// The open questions of a measured check and what settles them, from the measurement alone:
/// each open kind, and for each accepted index whether a plan of that kind read it. The judge
/// uses it to tell a re-plan made from one never made; the database side to know what to make.
pub fn of_measured(measured: &Measured) -> Vec<(PlanKind, Vec<(Accepted, bool)>)> {
    let lookups: Vec<&IndexLookup> = std::iter::once(&measured.index)
        .chain(measured.alternatives.iter())
        .collect();
    let accepted = accepted(&lookups);
    let custom: Vec<&Explain> = measured.custom.iter().map(|d| d.plan()).collect();
    let generic = measured.generic.as_ref().map(|d| d.plan());
    open_plans(&custom, generic, &accepted)
        .into_iter()
        .map(|kind| {
            let mut shown: Vec<&Explain> = measured
                .probes
                .iter()
                .filter(|p| p.plan == kind)
                .map(|p| p.document.plan())
                .collect();
            match kind {
                PlanKind::Custom => shown.extend(custom.iter().copied()),
                PlanKind::Generic => shown.extend(generic),
            }
            let seen = accepted
                .iter()
                .map(|a| (a.clone(), shown.iter().any(|p| a.read_by(p))))
                .collect();
            (kind, seen)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(index: Option<&str>) -> Explain {
        let node = match index {
            Some(i) => json!({ "Node Type": "Index Scan", "Index Name": i,
                               "Relation Name": "t", "Schema": "public" }),
            None => json!({ "Node Type": "Seq Scan", "Relation Name": "t", "Schema": "public" }),
        };
        Explain::from_json(&json!([{ "Plan": node }])).unwrap()
    }

    fn accepted_of(names: &[&str]) -> Vec<Accepted> {
        names
            .iter()
            .map(|n| Accepted {
                name: n.to_string(),
                reads: vec![n.to_string()],
            })
            .collect()
    }

    #[test]
    fn the_question_is_open_for_every_accepted_index_not_only_the_first() {
        // Regression: with `index = ["missing_idx", "existing_idx"]` the re-plans were decided by
        // the first accepted index alone, and the second was called not usable "even with seq
        // scans disabled" although no re-plan had been made.
        let accepted = accepted_of(&["existing_idx"]);
        let custom = [plan(None)];
        assert_eq!(
            open_plans(&[&custom[0]], None, &accepted),
            vec![PlanKind::Custom]
        );
        let needed = scratch_needed(&accepted, PlanKind::Custom, &[&custom[0]]);
        assert_eq!(needed, vec![("existing_idx".to_string(), PlanKind::Custom)]);
    }

    #[test]
    fn a_plan_through_any_accepted_index_closes_the_question() {
        let accepted = accepted_of(&["a", "b"]);
        let custom = [plan(Some("b"))];
        assert!(open_plans(&[&custom[0]], None, &accepted).is_empty());
    }

    #[test]
    fn the_generic_plan_is_open_whatever_the_custom_plan_reads() {
        // Regression: the generic plan was asked about only when every custom run read an
        // accepted index, so on a small database (the custom plan a seq scan) a generic plan
        // that cannot use the index was never judged.
        let accepted = accepted_of(&["a"]);
        let generic = plan(None);
        assert_eq!(
            open_plans(&[&plan(Some("a"))], Some(&generic), &accepted),
            vec![PlanKind::Generic]
        );
        assert_eq!(
            open_plans(&[&plan(None)], Some(&generic), &accepted),
            vec![PlanKind::Custom, PlanKind::Generic]
        );
        assert_eq!(
            open_plans(&[&plan(None)], Some(&plan(Some("a"))), &accepted),
            vec![PlanKind::Custom]
        );
    }

    #[test]
    fn an_index_a_re_plan_read_needs_no_scratch_re_plan_and_the_others_do() {
        let accepted = accepted_of(&["a", "b"]);
        let shown = [plan(None), plan(Some("a"))];
        let shown: Vec<&Explain> = shown.iter().collect();
        assert_eq!(
            scratch_needed(&accepted, PlanKind::Custom, &shown),
            vec![("b".to_string(), PlanKind::Custom)]
        );
        assert!(!every_one_seen(&accepted, &shown));
        let both = [plan(Some("a")), plan(Some("b"))];
        assert!(every_one_seen(&accepted, &both.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn nothing_accepted_opens_no_question() {
        assert!(open_plans(&[&plan(None)], None, &[]).is_empty());
    }
}
