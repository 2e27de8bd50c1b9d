//! `--replan-without-rivals`: when the required index never appeared in a plan and other indexes
//! on its table won every re-plan, re-plan with those rivals dropped, in a read-write transaction
//! of its own that is always rolled back. Disabling scan types cannot set aside one index; this
//! can, so the planner's own plan through the required index and its cost are seen.
//!
//! What it costs the database: each DROP takes an ACCESS EXCLUSIVE lock on the table (and, for
//! an index backing a constraint dropped with CASCADE, on the tables whose foreign keys
//! reference it), waiting at most `--lock-timeout`, held until the rollback a few milliseconds
//! later: reads and writes of those tables wait that long. Nothing runs but EXPLAIN (no
//! ANALYZE). The scope's setup must be SET/RESET statements only: plancheck runs a setup's
//! SELECT in a read-only transaction, never in this one.

use super::{Begin, Fail, Sess, begin_bounded, failure, replan, run_setup, set_plan_cache_mode};
use crate::db::Asked;
use crate::measure::{Failure, IndexLookup, Measured, PlanKind, Probe};
use crate::plan::explain::Explain;
use crate::plan::replans;
use crate::project::{ReadPath, ScopeCheck};
use crate::sql::{Dialect, Kind, classify};

/// At most this many rounds of setting rivals aside: a plan that names yet another index on the
/// table after that many is left unsettled.
const ROUNDS: usize = 6;

/// Adds the re-plans without rivals to `measured` when they can settle something, or says in
/// it why they were not made.
// Long because it decides, in order, whether a re-plan without rivals can settle anything (the index, the plan kind, the rivals, the setup) before making it.
pub(super) async fn settle(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    measured: &mut Measured,
) -> Result<(), Failure> {
    let IndexLookup::Found(facts) = &measured.index else {
        return Ok(());
    };
    if !facts.partitions.is_empty() {
        return Ok(());
    }
    let (name, table) = (facts.info.name.clone(), facts.info.table.clone());
    let schema = facts.info.schema.clone();
    // Which plan is open, and whether a re-plan read the required index already: the plan
    // analysis (`plan::replans`) the checks' own re-plans use.
    // The first open kind (the custom plan's when it is open): what the planner chose at this
    // data is its question, and one read-write transaction of drops is enough to ask.
    let Some((kind, seen)) = replans::of_measured(measured).into_iter().next() else {
        return Ok(());
    };
    let shown = crate::model::Relation::new(Some(&schema), &name).to_string();
    if seen
        .iter()
        .find(|(a, _)| a.name == shown)
        .is_none_or(|(_, seen)| *seen)
    {
        return Ok(());
    }
    let mut plans: Vec<&Explain> = measured
        .probes
        .iter()
        .filter(|p| p.plan == kind)
        .map(|p| p.document.plan())
        .collect();
    plans.extend(measured.custom.iter().map(|d| d.plan()));
    let rivals = rivals_in(&plans, &table, &name, &[]);
    if rivals.is_empty() {
        return Ok(());
    }
    let dialect = Dialect::default();
    if let Some(s) = check
        .setup
        .iter()
        .find(|s| !matches!(classify(s, dialect), Kind::Set { .. } | Kind::Reset { .. }))
    {
        measured.replan_skipped = Some(crate::report::failure::rivals_not_set_aside(s.trim()));
        return Ok(());
    }
    let mode = match kind {
        PlanKind::Custom => (!check.params.is_empty()).then_some("force_custom_plan"),
        PlanKind::Generic => Some("force_generic_plan"),
    };
    let found = without_rivals(
        sess,
        read_path,
        check,
        (&schema, &table, &name),
        rivals,
        mode,
        kind,
    )
    .await;
    // Whatever happened, nothing of it stays.
    let end = sess.exec("ROLLBACK").await;
    let found = found?;
    end.map_err(|f| f.or(|e| failure(e, Asked::RollbackReplan, sess.settings)))?;
    measured.probes.extend(found);
    Ok(())
}

/// The other indexes on `table` the plans use, not yet dropped.
fn rivals_in(plans: &[&Explain], table: &str, name: &str, dropped: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for plan in plans {
        for s in plan.scans() {
            if s.kind.uses_index()
                && s.relation == Some(table)
                && let Some(n) = &s.node.index_name
                && n != name
                && !dropped.contains(n)
                && !out.contains(n)
            {
                out.push(n.clone());
            }
        }
    }
    out
}

// Long because it is the whole transaction in order: begin, bounds, settings, setup, then rounds
// of dropping and re-planning.
async fn without_rivals(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    (schema, table, name): (&str, &str, &str),
    mut rivals: Vec<String>,
    mode: Option<&str>,
    kind: PlanKind,
) -> Result<Vec<Probe>, Failure> {
    let settings = sess.settings;
    let fail = |asked: Asked| move |f: Fail| f.or(|e| failure(e, asked, settings));
    sess.exec(&begin_bounded(Begin::ReadWrite, settings))
        .await
        .map_err(fail(Asked::BeginReplan))?;
    for (k, v) in &check.settings {
        sess.query("SELECT pg_catalog.set_config($1, $2, true)", &[k, v])
            .await
            .map_err(fail(Asked::ReplanSettings))?;
    }
    let before = sess.snapshot().await?;
    run_setup(sess, read_path, check, &before).await?;
    if let Some(mode) = mode {
        set_plan_cache_mode(sess, mode, None).await?;
    }
    let mut dropped: Vec<String> = Vec::new();
    let mut probes = Vec::new();
    for _ in 0..ROUNDS {
        for rival in &rivals {
            set_aside(sess, schema, rival).await?;
            dropped.push(rival.clone());
        }
        let mut next = Vec::new();
        for disabled in [&[][..], &["enable_seqscan"][..]] {
            let document = replan(sess, check, mode, disabled).await?;
            let read_it = document.plan().reads_any(&[name]);
            next = rivals_in(&[document.plan()], table, name, &dropped);
            probes.push(Probe {
                plan: kind,
                disabled: disabled.iter().map(|d| d.to_string()).collect(),
                dropped: dropped.clone(),
                document,
            });
            if read_it {
                return Ok(probes);
            }
            if !next.is_empty() {
                break;
            }
        }
        if next.is_empty() {
            break;
        }
        rivals = next;
    }
    Ok(probes)
}

/// Drops one index, or the constraint it backs (with CASCADE: the foreign keys referencing it go
/// too), inside the re-plan's transaction. The statement is built by the server's `format()`
/// from the catalog, never from text in a file.
async fn set_aside(sess: Sess<'_>, schema: &str, index: &str) -> Result<(), Failure> {
    let settings = sess.settings;
    let rows = sess
        .query(
            "SELECT CASE WHEN con.conname IS NOT NULL \
                    THEN pg_catalog.format('ALTER TABLE %I.%I DROP CONSTRAINT %I CASCADE', \
                                           n.nspname, t.relname, con.conname) \
                    ELSE pg_catalog.format('DROP INDEX %I.%I', n.nspname, c.relname) END \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid \
             JOIN pg_catalog.pg_class t ON t.oid = i.indrelid \
             LEFT JOIN pg_catalog.pg_constraint con \
               ON con.conindid = c.oid AND con.conrelid = t.oid \
              AND con.contype OPERATOR(pg_catalog.=) ANY (ARRAY['p', 'u', 'x']::\"char\"[]) \
             WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2",
            &[&schema, &index],
        )
        .await
        .map_err(|f| f.or(|e| failure(e, Asked::RivalAside, settings)))?;
    let Some(statement) = rows.first().map(|r| r.get::<_, String>(0)) else {
        return Err(super::Why::RivalGone {
            schema: schema.to_string(),
            index: index.to_string(),
        }
        .into());
    };
    sess.exec(&statement).await.map_err(|f| {
        f.or(|e| {
            failure(
                e,
                Asked::SetRivalAside {
                    index: index.to_string(),
                    statement: statement.clone(),
                },
                settings,
            )
        })
    })?;
    Ok(())
}
