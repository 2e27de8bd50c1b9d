//! Who reads past row-level security: for every table with row-level security on that a
//! check's plans read, whether its policies apply to the check's reader (the role after the
//! scope's setup), and the catalog's facts that say why not (superuser, BYPASSRLS, the table's
//! owner without `FORCE ROW LEVEL SECURITY`). A plan shows a policy's conditions only where it
//! applies: a setup that switches to a reader it does not apply to can turn a failure into a
//! pass, so the judge must know. Read in the check's transaction, with the relation statistics'
//! query; the judge decides and the report words it.

use std::cell::RefCell;
use std::collections::HashMap;

use super::{Failure, Sess, failure};
use crate::db::Asked;
use crate::measure::RowSecurity;
use crate::project::ScopeCheck;

/// Each relation `(schema, name)` with row-level security on, as the session's `current_user`
/// meets it: `row_security_active` (PostgreSQL's own answer to whether the policies apply), and
/// the facts behind it. A relation without row-level security (or not in the catalog) answers
/// no row.
const ROW_SECURITY: &str = "\
    SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text, \
           pg_catalog.row_security_active(c.oid), CURRENT_USER::pg_catalog.text, \
           r.rolsuper, r.rolbypassrls, pg_catalog.pg_get_userbyid(c.relowner)::pg_catalog.text, \
           pg_catalog.pg_has_role(CURRENT_USER, c.relowner, 'USAGE'), c.relforcerowsecurity \
      FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), \
                      pg_catalog.unnest($2::pg_catalog.text[])) AS w(schema, name) \
      JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) w.schema \
      JOIN pg_catalog.pg_class c \
        ON c.relnamespace OPERATOR(pg_catalog.=) n.oid AND c.relname OPERATOR(pg_catalog.=) w.name \
      JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) CURRENT_USER \
     WHERE c.relrowsecurity";

/// A scope's setup and declared settings: they alone decide who reads after them (every
/// session of a run connects as the same role).
type Reader = (Vec<String>, Vec<(String, String)>);

/// What one reader met, by relation `(schema, name)`: None where row-level security is off.
type Met = HashMap<(String, String), Option<RowSecurity>>;

/// What was read per reader and relation, so that each is asked once per run, not once per
/// check. A run that applies a migration reads again after it (its catalog is a new one).
#[derive(Default)]
pub(super) struct Known(RefCell<HashMap<Reader, Met>>);

/// The row-level security of each of `wanted` with it on, as the check's reader meets it: read
/// for those not known yet for this scope's setup, in one query.
pub(super) async fn read(
    sess: Sess<'_>,
    check: &ScopeCheck,
    wanted: &[(String, String)],
    known: &Known,
) -> Result<Vec<RowSecurity>, Failure> {
    let reader: Reader = (check.setup.clone(), check.settings.clone());
    let missing: Vec<(String, String)> = {
        let known = known.0.borrow();
        let of_reader = known.get(&reader);
        wanted
            .iter()
            .filter(|w| of_reader.is_none_or(|k| !k.contains_key(*w)))
            .cloned()
            .collect()
    };
    if !missing.is_empty() {
        let schemas: Vec<&str> = missing.iter().map(|(s, _)| s.as_str()).collect();
        let names: Vec<&str> = missing.iter().map(|(_, n)| n.as_str()).collect();
        let rows = sess
            .query(ROW_SECURITY, &[&schemas, &names])
            .await
            .map_err(|f| f.or(|e| failure(e, Asked::RowSecurity, sess.settings)))?;
        let mut known = known.0.borrow_mut();
        let of_reader = known.entry(reader.clone()).or_default();
        for w in missing {
            of_reader.insert(w, None);
        }
        for r in rows {
            let facts = RowSecurity {
                schema: r.get(0),
                table: r.get(1),
                applies: r.get(2),
                reader: r.get(3),
                superuser: r.get(4),
                bypassrls: r.get(5),
                owner: r.get(6),
                owns: r.get(7),
                forced: r.get(8),
            };
            of_reader.insert((facts.schema.clone(), facts.table.clone()), Some(facts));
        }
    }
    let known = known.0.borrow();
    let of_reader = known.get(&reader);
    Ok(wanted
        .iter()
        .filter_map(|w| of_reader?.get(w).cloned().flatten())
        .collect())
}
