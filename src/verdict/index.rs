//! The required index itself: `missing-index` (with the names nearest to the one written) and
//! `invalid-index` (there, but not valid or not ready: the planner ignores it).

use crate::measure::IndexName;
use crate::model::{IndexInfo, Relation};

/// The `missing-index` message: the index does not exist; the nearest existing names (on the
/// tables the plan reads first); and a word when the name looks table-qualified.
pub fn missing(
    required: &str,
    nearest: &[IndexName],
    schemas: &[String],
    tables: &[&str],
) -> String {
    let (qualifier, bare) = split_qualified(required);
    let mut out = format!("index {required} does not exist in the database");
    if let Some(q) = &qualifier
        && !schemas.iter().any(|s| s == q)
    {
        let is_table = nearest.iter().any(|n| &n.table == q);
        out.push_str(&format!(
            "; `{q}` is not a schema{}: an index is named by its own name, or `schema.name`, \
             never `table.name`",
            if is_table { " but a table" } else { "" }
        ));
    }
    // A table's name where an index's is wanted: its indexes are the names to choose from.
    let of_table: Vec<String> = nearest
        .iter()
        .filter(|n| n.table == bare && qualifier.as_ref().is_none_or(|q| *q == n.schema))
        .map(|n| Relation::new(Some(&n.schema), &n.name).to_string())
        .collect();
    if !of_table.is_empty() {
        out.push_str(&format!(
            ": `{bare}` is a table, not an index; name the index on it the read path must use: \
             {}",
            of_table.join(", ")
        ));
        return out;
    }
    let mut ranked: Vec<(usize, bool, &IndexName)> = nearest
        .iter()
        .map(|n| {
            let d = distance(&bare.to_lowercase(), &n.name.to_lowercase());
            (d, !tables.contains(&n.table.as_str()), n)
        })
        .filter(|(d, _, n)| *d <= (bare.chars().count().max(n.name.chars().count()) / 3).max(2))
        .collect();
    ranked.sort_by(|a, b| (a.1, a.0, &a.2.name).cmp(&(b.1, b.0, &b.2.name)));
    let names: Vec<String> = ranked
        .iter()
        .take(3)
        .map(|(_, _, n)| {
            format!(
                "{} (on {})",
                Relation::new(Some(&n.schema), &n.name),
                Relation::new(Some(&n.schema), &n.table)
            )
        })
        .collect();
    if names.is_empty() {
        out.push_str(" (dropped by a migration, or not created yet?)");
    } else {
        out.push_str(&format!("; did you mean {}?", names.join(", or ")));
    }
    out
}

/// `schema.name` as written, unquoted: (Some(schema), name), or (None, name).
fn split_qualified(name: &str) -> (Option<String>, String) {
    let tokens = crate::sql::significant(name, crate::sql::Dialect::default());
    let ids: Vec<String> = tokens.iter().filter_map(|t| t.identifier()).collect();
    match (tokens.len(), ids.as_slice()) {
        (3, [schema, bare]) if tokens[1].text == "." => (Some(schema.clone()), bare.clone()),
        _ => (
            None,
            ids.last().cloned().unwrap_or_else(|| name.to_string()),
        ),
    }
}

/// Levenshtein distance, in characters.
fn distance(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}

/// The `invalid-index` message: what state the index is in, how it gets there, how to rebuild.
pub fn invalid(info: &IndexInfo) -> String {
    let name = Relation::new(Some(&info.schema), &info.name);
    let state = if !info.ready {
        "is not ready (indisready = false): a CREATE INDEX CONCURRENTLY is still building it, or \
         one failed or was cancelled in its first phase"
    } else {
        "is not valid (indisvalid = false): a CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY \
         failed or was cancelled (a deadlock, a unique violation, a timeout), or it is being \
         built right now"
    };
    format!(
        "index {name} exists but {state}; the planner ignores it whatever the SQL says. Rebuild \
         it with `REINDEX INDEX CONCURRENTLY {name}` (or DROP INDEX CONCURRENTLY and create it \
         again)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(schema: &str, name: &str, table: &str) -> IndexName {
        IndexName {
            schema: schema.into(),
            name: name.into(),
            table: table.into(),
        }
    }

    #[test]
    fn a_typo_names_the_nearest_indexes_on_the_plan_s_tables_first() {
        let all = [
            idx("public", "events_order_room_idx", "events"),
            idx("public", "events_order_room_idy", "other"),
            idx("public", "users_pkey", "users"),
        ];
        let m = missing("events_order_room", &all, &["public".into()], &["events"]);
        assert!(
            m.contains("did you mean events_order_room_idx (on events), or events_order_room_idy"),
            "{m}"
        );
        assert!(!m.contains("users_pkey"), "{m}");
        let none = missing("zzz", &all, &["public".into()], &[]);
        assert!(none.contains("dropped by a migration"), "{none}");
    }

    #[test]
    fn a_table_qualified_name_is_called_so() {
        let all = [idx("public", "events_order_room_idx", "events")];
        let m = missing("events.events_order_room", &all, &["public".into()], &[]);
        assert!(m.contains("`events` is not a schema but a table"), "{m}");
        assert!(m.contains("did you mean events_order_room_idx"), "{m}");
        let m = missing("public.events_order_room", &all, &["public".into()], &[]);
        assert!(!m.contains("not a schema"), "{m}");
    }

    #[test]
    fn a_table_named_where_an_index_is_wanted_lists_its_indexes() {
        let all = [
            idx("public", "users_pkey", "users"),
            idx("public", "users_email_idx", "users"),
            idx("audit", "users_pkey", "users"),
        ];
        let m = missing("users", &all, &["public".into(), "audit".into()], &[]);
        assert!(
            m.contains("`users` is a table, not an index")
                && m.contains("users_pkey, users_email_idx, audit.users_pkey"),
            "{m}"
        );
        assert!(!m.contains("not created yet"), "{m}");
        let m = missing("audit.users", &all, &["public".into(), "audit".into()], &[]);
        assert!(m.ends_with("must use: audit.users_pkey"), "{m}");
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
    }
}
