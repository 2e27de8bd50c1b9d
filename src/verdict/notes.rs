//! Notes on what the planner knew: a relation never analysed, or changed a lot since, makes the
//! planner's choice mean little. Not verdicts: said beside them.

use super::group;
use crate::measure::RelationFacts;
use crate::model::Relation;

/// One note per relation whose statistics are missing or stale.
pub fn of(relations: &[RelationFacts]) -> Vec<String> {
    relations.iter().filter_map(note).collect()
}

fn note(r: &RelationFacts) -> Option<String> {
    let name = Relation::new(Some(&r.schema), &r.name);
    if !r.has_statistics && r.bytes > 0 {
        return Some(format!(
            "{name} has never been analysed: the planner guessed its statistics, so its choice \
             means little (run ANALYZE {name})"
        ));
    }
    let modified = r.modified_since_analyze? as f64;
    if modified > (r.reltuples.max(0.0) * 0.2).max(1000.0) {
        return Some(format!(
            "{name} changed a lot since it was last analysed ({} rows modified, about {} rows \
             in all): the planner's choice may not hold (run ANALYZE {name})",
            group(modified),
            group(r.reltuples.max(0.0))
        ));
    }
    None
}
