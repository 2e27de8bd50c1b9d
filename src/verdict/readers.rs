//! Who read: a table's row-level security policies join the read path's conditions only for a
//! reader they apply to, so a plan made by a reader they do not apply to (a superuser, a role
//! with BYPASSRLS, the table's owner without `FORCE ROW LEVEL SECURITY`) shows none of them, and
//! its verdict is not the application's. A scope's setup chooses the reader (`SET ROLE`): this
//! names every table the plans read whose policies the reader read past, and why, from the
//! catalog's facts and PostgreSQL's own `row_security_active`. Not a verdict: said beside it in
//! every format, and refused under `--strict-role`.

use serde::Serialize;

use crate::measure::RowSecurity;
use crate::model::Relation;

/// A table whose row-level security policies did not apply to the check's reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PastPolicies {
    /// The table, as reports name relations.
    pub table: String,
    /// The role that read (after the scope's setup).
    pub reader: String,
    #[serde(flatten)]
    pub why: Past,
}

/// Why the policies did not apply, as PostgreSQL decides it (`check_enable_rls`): in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "kebab-case")]
pub enum Past {
    /// The reader is a superuser.
    Superuser,
    /// The reader has BYPASSRLS.
    Bypassrls,
    /// The reader has the privileges of the table's owner (`owner`), and the table does not
    /// force row-level security on its owner.
    Owner { owner: String },
    /// `row_security_active` said the policies do not apply, and none of the facts read says
    /// why.
    NotSettled,
}

/// The tables of `read` whose policies the reader read past, in the order read.
pub fn past(read: &[RowSecurity]) -> Vec<PastPolicies> {
    read.iter()
        .filter(|r| !r.applies)
        .map(|r| PastPolicies {
            table: Relation::new(Some(&r.schema), &r.table).to_string(),
            reader: r.reader.clone(),
            why: if r.superuser {
                Past::Superuser
            } else if r.bypassrls {
                Past::Bypassrls
            } else if r.owns && !r.forced {
                Past::Owner {
                    owner: r.owner.clone(),
                }
            } else {
                Past::NotSettled
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(
        applies: bool,
        superuser: bool,
        bypassrls: bool,
        owns: bool,
        forced: bool,
    ) -> RowSecurity {
        RowSecurity {
            schema: "public".into(),
            table: "posts".into(),
            applies,
            reader: "board_reader".into(),
            superuser,
            bypassrls,
            owner: "board_owner".into(),
            owns,
            forced,
        }
    }

    #[test]
    fn a_reader_the_policies_apply_to_reads_past_nothing() {
        assert!(past(&[read(true, false, false, false, false)]).is_empty());
        // Forced on its owner: the owner reads through the policies.
        assert!(past(&[read(true, false, false, true, true)]).is_empty());
    }

    #[test]
    fn each_reader_past_the_policies_is_named_with_why() {
        let why = |r: RowSecurity| past(&[r]).remove(0).why;
        assert_eq!(why(read(false, true, true, true, false)), Past::Superuser);
        assert_eq!(why(read(false, false, true, true, false)), Past::Bypassrls);
        assert_eq!(
            why(read(false, false, false, true, false)),
            Past::Owner {
                owner: "board_owner".into()
            }
        );
        assert_eq!(
            why(read(false, false, false, false, false)),
            Past::NotSettled
        );
        let p = &past(&[read(false, false, true, false, false)])[0];
        assert_eq!(
            (p.table.as_str(), p.reader.as_str()),
            ("posts", "board_reader")
        );
    }
}
