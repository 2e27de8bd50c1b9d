//! The plan file an expectation checks: found (a near miss named when it is not), not empty,
//! read once for its placeholders, and rendered per scope into one query.

use std::collections::BTreeMap;

use toml::Spanned;

use super::names::is_safe_name;
use super::place::File;
use super::template::PlanTemplate;
use super::{RenderedSql, Source};
use crate::error::{BadInput, located};

/// A plan file, read once for all the scopes of the expectation that checks it.
pub(super) struct Plan {
    /// `plans/NAME.sql` as the user sees it.
    pub(super) path: String,
    pub(super) sql: String,
    pub(super) template: PlanTemplate,
}

/// The plan file read path `name` checks: `plans/NAME.sql`, or the one its expectation's
/// `plan` names (`written`); an error is located at `plan`, else at the expectation's start.
pub(super) fn read_plan(
    source: &Source,
    here: File<'_>,
    written: Option<&Spanned<String>>,
    name: &str,
) -> Result<Plan, BadInput> {
    let plan_name = match written {
        Some(p) => {
            let value = p.get_ref();
            if !is_safe_name(value) {
                return Err(here.at(
                    p.span().start,
                    "`plan` must be a read-path name (plans/NAME.sql), not a path",
                ));
            }
            value.clone()
        }
        None => name.to_string(),
    };
    let plan_rel = format!("plans/{plan_name}.sql");
    let path = source.display(&plan_rel);
    let Some(sql) = source.read(&plan_rel)? else {
        return Err(missing(source, here, written, &plan_name, &path));
    };
    if sql.trim().is_empty() {
        return Err(BadInput(located(
            &path,
            &sql,
            0,
            "the plan file is empty: it must hold the read path's SQL",
        )));
    }
    let template = PlanTemplate::read(&path, &sql)?;
    Ok(Plan {
        path,
        sql,
        template,
    })
}

/// The error for a plan file that does not exist, naming a near miss: the same name in another
/// case, or `plan` written with `.sql`.
fn missing(
    source: &Source,
    here: File<'_>,
    written: Option<&Spanned<String>>,
    plan_name: &str,
    plan_path: &str,
) -> BadInput {
    let mut message = format!("the plan file {plan_path} does not exist");
    if written.is_none() {
        message.push_str(
            ": an expectation checks plans/<its own name>.sql unless it sets \
             `plan = \"NAME\"`",
        );
    }
    let wanted = format!("{plan_name}.sql").to_lowercase();
    if let Some(other) = source
        .entries("plans")
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .find(|n| n.to_lowercase() == wanted)
    {
        message.push_str(&format!(
            " (there is plans/{other}: the name and extension must match exactly, in \
             case too)"
        ));
    } else if plan_name.ends_with(".sql") {
        message.push_str(" (`plan` names the read path, without `.sql`)");
    }
    let offset = written.map(|p| p.span().start).unwrap_or(0);
    here.at(offset, &message)
}

impl Plan {
    /// The plan with `fragments` filled in for `scope`, checked to be one query.
    pub(super) fn render(
        &self,
        fragments: &BTreeMap<String, String>,
        scope: &str,
    ) -> Result<RenderedSql, BadInput> {
        let sql = self
            .template
            .render(&self.path, &self.sql, fragments, scope)?;
        check_one_query(&self.path, &self.sql, &sql, scope)?;
        Ok(sql)
    }
}

/// A read path is one query. Parse on the server refuses a second statement too; refusing it
/// here says where, before anything runs. With fragments filled in, so a fragment's value
/// cannot add one either.
fn check_one_query(
    plan_path: &str,
    plan_sql: &str,
    sql: &RenderedSql,
    scope: &str,
) -> Result<(), BadInput> {
    use crate::sql::{Dialect, Kind};
    let dialect = Dialect::default();
    let at = |text: &str, offset: usize| {
        let lead = crate::sql::significant(text, dialect)
            .first()
            .map_or(0, |t| t.start);
        sql.source_offset(offset + lead)
    };
    let statements = crate::sql::split(&sql.text, dialect);
    if let Some(second) = statements.get(1) {
        return Err(BadInput(located(
            plan_path,
            plan_sql,
            at(second.text, second.offset),
            &format!(
                "a plan file holds one statement, the read path; a second one starts here \
                 (in scope `{scope}`, with its fragments filled in)"
            ),
        )));
    }
    let why = match crate::sql::classify(&sql.text, dialect) {
        Kind::Query => return Ok(()),
        Kind::Other(word) if word == "EXPLAIN" => {
            "the read path is the query alone: plancheck adds EXPLAIN itself".to_string()
        }
        Kind::TransactionControl(w) | Kind::Other(w) if !w.is_empty() => {
            format!("a read path is a query (SELECT, WITH … SELECT, VALUES or TABLE), not `{w}`")
        }
        _ => "a read path is a query (SELECT, WITH … SELECT, VALUES or TABLE)".to_string(),
    };
    Err(BadInput(located(
        plan_path,
        plan_sql,
        at(&sql.text, 0),
        &why,
    )))
}
