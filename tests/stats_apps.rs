//! `check --stats` on a real application's schema nobody here wrote: GitLab's projects list
//! (`tests/apps/gitlab`: its tables and indexes from `db/structure.sql`, seven read paths of its
//! API under four kinds of reader, deterministic data at any scale). The loaded database's
//! statistics, exported for the project's read paths, make a CI database (empty, or a hundredth
//! of the rows) plan every check as the loaded database does: the same verdicts, shapes, index
//! on every scan node, row estimates and costs (within 1 %).

mod common;

use std::path::PathBuf;

use common::*;

fn app() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apps/gitlab")
}

/// A database `name` holding the application's schema and, at `scale`, its data (analysed).
fn loaded(name: &str, scale: Option<&str>) -> String {
    let db = empty_database(name);
    sql(
        &db,
        &std::fs::read_to_string(app().join("schema.sql")).unwrap(),
    );
    match scale {
        Some(scale) => {
            let load = std::fs::read_to_string(app().join("load.sql")).unwrap();
            sql(&db, &format!("SET apps.scale = '{scale}';\n{load}"));
        }
        None => sql(&db, "ANALYZE"),
    }
    // Each B-tree's height read from its metapage, not estimated from its pages.
    sql(&db, "CREATE EXTENSION IF NOT EXISTS pageinspect");
    db
}

fn predicts(production: &str, ci: &str) -> Compared {
    let project = app();
    let compared = plans_as_loaded_for(
        production,
        ci,
        &project,
        &["--project", project.to_str().unwrap()],
        true,
    );
    // Seven read paths under their scopes, each a custom plan at least.
    assert!(compared.plans >= 20, "{} plans compared", compared.plans);
    compared
}

#[test]
fn an_empty_copy_of_gitlab_s_schema_plans_as_a_hundredth_of_its_data() {
    let production = loaded("stats_apps_small", Some("0.01"));
    let ci = loaded("stats_apps_small_ci", None);
    predicts(&production, &ci);
}

#[test]
#[ignore = "loads a million projects and 2.3 million authorizations (about 40 s): CI runs it on \
            PostgreSQL 13, 15 and 18 (.ci/run)"]
fn a_ci_database_of_gitlab_s_schema_plans_as_the_full_size_one() {
    let production = loaded("stats_apps_full", Some("1"));
    // A CI database: the same schema with a hundredth of the rows, whose own plans are not
    // production's.
    let ci = loaded("stats_apps_full_ci", Some("0.01"));
    let compared = predicts(&production, &ci);
    let checks = compared.at_stats["checks"].as_array().unwrap();
    assert!(
        checks.iter().all(|c| c["verdict"] == "pass"),
        "{}",
        compared.at_stats
    );
    // The full size's gigabyte goes.
    empty_database("stats_apps_full");
}
