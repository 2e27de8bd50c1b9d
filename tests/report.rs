//! The report renderers on hand-built reports, no database: the table people read and the JSON
//! machines read, for a pass, every failing verdict, a warning under `--require usable`, notes,
//! declared settings, lint findings, a migration's before and after, and `--explain`; and the
//! summary counts and exit status each report stands for.

use plancheck::db::role::RoleRisk;
use plancheck::lint::{Finding, Kind};
use plancheck::report::{Format, Report, Summary, render};
use plancheck::verdict::{Budget, BudgetUsed, CheckResult, Relative, Require, Spread, Verdict};
use serde_json::{Value, json};

// ----------------------------------------------------------------------------------------------
// Builders.

/// A measured check with fixed figures that uses its required index, with `verdict` on it. The
/// index's table is the first word of its name.
fn check(read_path: &str, scope: &str, index: &str, verdict: Verdict) -> CheckResult {
    let table = index.split('_').next().unwrap();
    CheckResult {
        read_path: read_path.into(),
        scope: scope.into(),
        required_index: index.into(),
        accepted: vec![],
        verdict,
        used: vec![format!("Index Scan using {index} on {table}")],
        instead: vec![],
        seq_scans: vec![],
        message: format!("Index Scan using {index} on {table} (custom and generic plans)"),
        warm_ms: Some(Spread {
            p50: 0.42,
            min: 0.4,
            max: 0.5,
        }),
        planning_ms: Some(Spread {
            p50: 0.11,
            min: 0.1,
            max: 0.12,
        }),
        shared_buffers: Some(1234.0),
        connection_lost: false,
        notes: vec![],
        budget: Budget::default(),
        budget_used: None,
        usable: None,
        large_reads: vec![],
        plans: vec![],
        settings: vec![],
    }
}

fn pass(read_path: &str, scope: &str, index: &str) -> CheckResult {
    check(read_path, scope, index, Verdict::Pass)
}

/// A report of these checks on PostgreSQL 15.8, requiring the index chosen, with nothing else.
fn report(checks: Vec<CheckResult>) -> Report {
    Report {
        server_version: "15.8".into(),
        checks,
        require: Require::Chosen,
        lint: vec![],
        explain: false,
        before: None,
        role_warnings: vec![],
    }
}

fn table(report: &Report) -> String {
    render(report, Format::Table)
}

/// The JSON rendering, parsed (and checked to be one document ending in a newline).
fn json_of(report: &Report) -> Value {
    let text = render(report, Format::Json);
    assert!(text.ends_with("}\n"), "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn summary(passed: usize, failed: usize, errors: usize, warnings: usize) -> Summary {
    Summary {
        passed,
        failed,
        errors,
        warnings,
    }
}

/// One check of each failing verdict, each as the judge would leave it.
fn failing_checks() -> Vec<CheckResult> {
    let mut not_usable = check(
        "thread-page-first",
        "member",
        "posts_thread_visible_idx",
        Verdict::NotUsable,
    );
    not_usable.used = vec!["Index Scan using posts_thread_all_idx on posts p".into()];
    not_usable.instead = not_usable.used.clone();
    not_usable.usable = Some(false);
    not_usable.message = "posts_thread_visible_idx cannot serve this read path: its predicate \
        (visibility = 'visible') is not implied by Filter: (p.visibility <> 'deleted'::text), \
        a widened predicate"
        .into();

    let mut not_chosen = check(
        "member-profile",
        "member",
        "posts_author_visible_idx",
        Verdict::NotChosen,
    );
    not_chosen.used = vec!["Bitmap Index Scan using posts_author_idx on posts".into()];
    not_chosen.instead = not_chosen.used.clone();
    not_chosen.usable = Some(true);
    not_chosen.message = "posts_author_visible_idx is usable but not chosen: the chosen plan \
        costs 12.50; a plan using posts_author_visible_idx costs 14.00"
        .into();

    let mut key_unused = check(
        "thread-page-deep",
        "member",
        "posts_thread_visible_idx",
        Verdict::KeyUnused,
    );
    key_unused.message = "posts_thread_visible_idx is read, but its key created_at is no Index \
        Cond: the cursor is a Filter on 611 rows"
        .into();

    let mut seq_scan = check(
        "discovery-latest",
        "member",
        "threads_latest_idx",
        Verdict::SeqScan,
    );
    seq_scan.used = vec![
        "Index Scan using threads_latest_idx on threads".into(),
        "Seq Scan on forums".into(),
    ];
    seq_scan.instead = vec!["Seq Scan on forums".into()];
    seq_scan.seq_scans = vec!["forums".into()];
    seq_scan.message = "a Seq Scan on forums beside threads_latest_idx (allow_seq_scan does not \
        name it)"
        .into();

    let mut generic = check(
        "search-rare",
        "member",
        "posts_body_search_idx",
        Verdict::GenericPlan,
    );
    generic.used = vec!["Seq Scan on posts".into()];
    generic.instead = generic.used.clone();
    generic.usable = Some(false);
    generic.message = "the custom plan uses posts_body_search_idx; the generic plan (after five \
        executions of a prepared statement) reads Seq Scan on posts"
        .into();

    let mut over_budget = check(
        "forum-page-deep",
        "member",
        "threads_forum_listing_idx",
        Verdict::OverBudget,
    );
    over_budget.budget = Budget {
        warm_ms: Some(50.0),
        buffers: None,
        relative: Some(Relative {
            to: "forum-page-first".into(),
            scope: None,
            max_ratio: 2.0,
        }),
    };
    over_budget.budget_used = Some(BudgetUsed {
        warm_ms: Some(0.04),
        buffers: None,
        ratio: Some(3.4),
    });
    over_budget.message = "shared buffers 1,234 are 3.4× those of forum-page-first [member], \
        over the limit of 2×"
        .into();

    let mut missing = check(
        "moderation-queue",
        "moderator",
        "posts_forum_visibility_idx",
        Verdict::MissingIndex,
    );
    missing.used = vec!["Seq Scan on posts".into()];
    missing.instead = missing.used.clone();
    missing.message = "no index posts_forum_visibility_idx on this database".into();

    let mut invalid = check(
        "forum-page-first",
        "moderator",
        "threads_forum_listing_all_idx",
        Verdict::InvalidIndex,
    );
    invalid.used = vec!["Seq Scan on threads".into()];
    invalid.instead = invalid.used.clone();
    invalid.message = "threads_forum_listing_all_idx is not valid (a failed CREATE INDEX \
        CONCURRENTLY?): the planner cannot use it"
        .into();

    let mut error = check(
        "thread-page-deep",
        "moderator",
        "posts_thread_all_idx",
        Verdict::Error,
    );
    error.used = vec![];
    error.warm_ms = None;
    error.planning_ms = None;
    error.shared_buffers = None;
    error.message = "plans/thread-page-deep.sql:3:7: column p.thred_id does not exist".into();

    vec![
        not_usable,
        not_chosen,
        key_unused,
        seq_scan,
        generic,
        over_budget,
        missing,
        invalid,
        error,
    ]
}

// ----------------------------------------------------------------------------------------------
// A pass.

#[test]
fn a_passing_check_renders_with_its_figures_and_exits_0() {
    let mut c = pass("thread-page-first", "member", "posts_thread_visible_idx");
    c.used
        .push("Index Scan using members_pkey on members".into());
    c.budget = Budget {
        warm_ms: Some(50.0),
        buffers: Some(2000.0),
        relative: None,
    };
    c.budget_used = Some(BudgetUsed {
        warm_ms: Some(0.0084),
        buffers: Some(0.617),
        ratio: None,
    });
    let r = report(vec![c]);
    assert_eq!(r.summary(), summary(1, 0, 0, 0));
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::PASS);
    let text = table(&r);
    assert_eq!(
        row(&text, "thread-page-first", "member")[3..],
        [
            "pass",
            "",
            "0.42 ms",
            "1,234",
            "1% of 50 ms, 62% of 2,000 buf"
        ]
    );
    assert!(
        text.ends_with("\n1 checks on PostgreSQL 15.8: 1 passed, 0 failed, 0 errors\n"),
        "{text}"
    );
    // Nothing failed, so nothing to explain.
    assert!(!text.contains("why:"), "{text}");
    insta::assert_snapshot!("pass_table", text);
    insta::assert_json_snapshot!("pass_json", json_of(&r));
}

#[test]
fn a_scope_accepting_several_indexes_names_them_all() {
    let mut c = pass("thread-page-first", "member", "posts_thread_visible_idx");
    c.accepted = vec![
        "posts_thread_visible_idx".into(),
        "posts_thread_visible_v2_idx".into(),
    ];
    let r = report(vec![c]);
    let text = table(&r);
    assert!(
        text.contains("posts_thread_visible_idx (or posts_thread_visible_v2_idx)"),
        "{text}"
    );
    let doc = json_of(&r);
    assert_eq!(
        doc["checks"][0]["accepted_indexes"],
        json!(["posts_thread_visible_idx", "posts_thread_visible_v2_idx"])
    );
    // A scope with one index has no such field at all.
    let doc = json_of(&report(vec![pass("p", "member", "i")]));
    assert!(
        doc["checks"][0].get("accepted_indexes").is_none(),
        "{doc:#}"
    );
}

// ----------------------------------------------------------------------------------------------
// Every failing verdict.

#[test]
fn every_failing_verdict_renders_its_row_and_its_reason() {
    let r = report(failing_checks());
    // Eight failures and one error; nothing passed.
    assert_eq!(r.summary(), summary(0, 8, 1, 0));
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::CHECK_FAILED);
    let text = table(&r);
    assert!(
        text.ends_with("\n9 checks on PostgreSQL 15.8: 0 passed, 8 failed, 1 errors\n"),
        "{text}"
    );
    insta::assert_snapshot!("failing_table", text);
    insta::assert_json_snapshot!("failing_json", json_of(&r));
}

#[test]
fn each_failing_verdict_alone_fails_the_run_and_is_explained_under_why() {
    let checks = failing_checks();
    let kinds: Vec<&str> = checks.iter().map(|c| c.verdict.as_str()).collect();
    // Every verdict but `pass`, once each.
    assert_eq!(
        kinds,
        [
            "not-usable",
            "not-chosen",
            "key-unused",
            "seq-scan",
            "generic-plan",
            "over-budget",
            "missing-index",
            "invalid-index",
            "error",
        ]
    );
    for c in checks {
        let verdict = c.verdict;
        let why = format!(
            "why:\n  {} [{}] {verdict}: {}\n",
            c.read_path, c.scope, c.message
        );
        let r = report(vec![c]);
        let expected = if verdict == Verdict::Error {
            summary(0, 0, 1, 0)
        } else {
            summary(0, 1, 0, 0)
        };
        assert_eq!(r.summary(), expected, "{verdict}");
        assert_eq!(plancheck::status(&r), 1, "{verdict}");
        let text = table(&r);
        assert!(text.contains(&why), "{verdict}: no {why:?} in\n{text}");
        let doc = json_of(&r);
        assert_eq!(doc["checks"][0]["verdict"], verdict.as_str());
        assert_eq!(doc["checks"][0]["warning"], false, "{verdict}");
        assert_eq!(doc["summary"], json!(expected), "{verdict}");
    }
}

/// The cells of a table's row for a check, a cell wrapped onto more lines joined again with
/// spaces.
fn row(text: &str, read_path: &str, scope: &str) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('│')) {
        let cells: Vec<String> = line
            .trim_matches('│')
            .split('┆')
            .map(|c| c.trim().to_string())
            .collect();
        match rows.last_mut() {
            // A continuation line: the read path's cell is empty.
            Some(last) if cells[0].is_empty() => {
                for (into, more) in last.iter_mut().zip(cells) {
                    if !more.is_empty() {
                        into.push(' ');
                        into.push_str(&more);
                    }
                }
            }
            _ => rows.push(cells),
        }
    }
    rows.into_iter()
        .find(|r| r[0] == read_path && r[1] == scope)
        .unwrap_or_else(|| panic!("no row {read_path} [{scope}] in\n{text}"))
}

#[test]
fn used_instead_shows_the_other_indexes_or_everything_when_the_index_is_missing() {
    let checks = failing_checks();
    let text = table(&report(checks));
    // Columns: read path, scope, required index, result, used instead, warm p50, buffers,
    // budget used.
    // not-chosen: the index used instead.
    let not_chosen = row(&text, "member-profile", "member");
    assert_eq!(not_chosen.len(), 8, "{not_chosen:?}");
    assert_eq!(not_chosen[3], "not-chosen");
    assert_eq!(
        not_chosen[4],
        "Bitmap Index Scan using posts_author_idx on posts"
    );
    assert_eq!(not_chosen[5..], ["0.42 ms", "1,234", ""]);
    // seq-scan: the other scans, never the required index's own line.
    let seq_scan = row(&text, "discovery-latest", "member");
    assert_eq!(seq_scan[4], "Seq Scan on forums");
    // missing-index: everything the read path uses.
    let missing = row(&text, "moderation-queue", "moderator");
    assert_eq!(missing[4], "Seq Scan on posts");
    // over-budget: the index verdict passed, so nothing was used instead; the share of each
    // budget used.
    let over = row(&text, "forum-page-deep", "member");
    assert_eq!(over[4], "");
    assert_eq!(over[7], "4% of 50 ms, 3.4× of 2× forum-page-first");
    // error: the message instead, and no figures.
    let error = row(&text, "thread-page-deep", "moderator");
    assert_eq!(error[3], "error");
    assert_eq!(
        error[4],
        "plans/thread-page-deep.sql:3:7: column p.thred_id does not exist"
    );
    assert_eq!(error[5..], ["-", "-", ""]);
}

#[test]
fn a_lost_connection_exits_3_whatever_else_failed() {
    let mut checks = failing_checks();
    let lost = checks.last_mut().unwrap();
    lost.connection_lost = true;
    lost.message = "the connection was lost: server closed the connection unexpectedly".into();
    let r = report(checks);
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::DATABASE);
    assert_eq!(r.summary(), summary(0, 8, 1, 0));
}

// ----------------------------------------------------------------------------------------------
// --require usable.

#[test]
fn not_chosen_but_usable_is_a_warning_under_require_usable_and_a_failure_otherwise() {
    let checks = failing_checks();
    let not_chosen = checks[1].clone();
    assert_eq!(not_chosen.verdict, Verdict::NotChosen);
    let mut r = report(vec![
        pass("thread-page-first", "member", "posts_thread_visible_idx"),
        not_chosen,
    ]);

    r.require = Require::Chosen;
    assert_eq!(r.summary(), summary(1, 1, 0, 0));
    assert_eq!(plancheck::status(&r), 1);
    assert!(!table(&r).contains("(warning)"));
    assert_eq!(json_of(&r)["checks"][1]["warning"], false);

    r.require = Require::Usable;
    assert_eq!(r.summary(), summary(1, 0, 0, 1));
    assert_eq!(plancheck::status(&r), 0);
    let text = table(&r);
    assert!(text.contains("not-chosen (warning)"), "{text}");
    assert!(
        text.ends_with(
            "\n2 checks on PostgreSQL 15.8: 1 passed, 0 failed, 0 errors, 1 warnings (usable, \
             not chosen)\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!("warning_table", text);
    insta::assert_json_snapshot!("warning_json", json_of(&r));
}

#[test]
fn require_usable_forgives_nothing_but_a_usable_index_not_chosen() {
    let checks = failing_checks();
    let mut r = report(checks.clone());
    r.require = Require::Usable;
    // Only not-chosen with usable = true warns; generic-plan here was proved not usable.
    assert_eq!(r.summary(), summary(0, 7, 1, 1));
    assert_eq!(plancheck::status(&r), 1);

    // A usable generic plan warns too.
    let mut generic = checks[4].clone();
    assert_eq!(generic.verdict, Verdict::GenericPlan);
    generic.usable = Some(true);
    let mut r = report(vec![generic.clone()]);
    r.require = Require::Usable;
    assert_eq!(r.summary(), summary(0, 0, 0, 1));
    assert_eq!(plancheck::status(&r), 0);

    // Not when the plan reads a large relation whole instead.
    generic.large_reads = vec!["posts".into()];
    let mut r = report(vec![generic]);
    r.require = Require::Usable;
    assert_eq!(r.summary(), summary(0, 1, 0, 0));
    assert_eq!(plancheck::status(&r), 1);
    assert_eq!(json_of(&r)["checks"][0]["large_reads"], json!(["posts"]));

    // Nor when usability was never settled.
    let mut unsettled = checks[1].clone();
    unsettled.usable = None;
    let mut r = report(vec![unsettled]);
    r.require = Require::Usable;
    assert_eq!(r.summary(), summary(0, 1, 0, 0));
    assert_eq!(json_of(&r)["checks"][0]["usable"], Value::Null);
}

// ----------------------------------------------------------------------------------------------
// Notes, declared settings, lint findings, role warnings.

#[test]
fn notes_are_listed_under_the_table_per_check() {
    let mut a = pass("thread-page-first", "member", "posts_thread_visible_idx");
    a.notes = vec![
        "posts has never been analysed: the planner guesses its size".into(),
        "members changed by 40% since its last ANALYZE".into(),
    ];
    let b = pass("thread-page-first", "moderator", "posts_thread_all_idx");
    let r = report(vec![a, b]);
    // A note is no failure.
    assert_eq!(r.summary(), summary(2, 0, 0, 0));
    assert_eq!(plancheck::status(&r), 0);
    let text = table(&r);
    assert!(
        text.contains(
            "\nnotes:\n  thread-page-first [member]: posts has never been analysed: the planner \
             guesses its size\n  thread-page-first [member]: members changed by 40% since its \
             last ANALYZE\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!("notes_table", text);
    let doc = json_of(&r);
    assert_eq!(doc["checks"][0]["notes"].as_array().unwrap().len(), 2);
    assert_eq!(doc["checks"][1]["notes"], json!([]));
}

#[test]
fn declared_settings_are_shown_once_per_scope() {
    let settings = vec![
        ("enable_seqscan".to_string(), "off".to_string()),
        ("random_page_cost".to_string(), "1.1".to_string()),
    ];
    let mut a = pass("thread-page-first", "member", "posts_thread_visible_idx");
    a.settings = settings.clone();
    let mut b = pass("thread-page-deep", "member", "posts_thread_visible_idx");
    b.settings = settings;
    let c = pass("thread-page-first", "moderator", "posts_thread_all_idx");
    let r = report(vec![a, b, c]);
    let text = table(&r);
    assert!(
        text.contains(
            "\nplanner settings applied (settings = {…}):\n  [member] enable_seqscan = off, \
             random_page_cost = 1.1\n\n"
        ),
        "{text}"
    );
    assert_eq!(text.matches("[member] enable_seqscan").count(), 1, "{text}");
    assert!(!text.contains("[moderator] "), "{text}");
    insta::assert_snapshot!("settings_table", text);
    let doc = json_of(&r);
    assert_eq!(
        doc["checks"][0]["settings"],
        json!({"enable_seqscan": "off", "random_page_cost": "1.1"})
    );
    assert_eq!(doc["checks"][2]["settings"], json!({}));
}

fn findings() -> Vec<Finding> {
    vec![
        Finding {
            kind: Kind::TwinDrift,
            read_path: "thread-page-first".into(),
            index: "posts_thread_visible_idx".into(),
            twin: Some("posts_thread_all_idx".into()),
            problem: "posts_thread_visible_idx and its twin posts_thread_all_idx drifted: key \
                      columns in a different order: (thread_id, created_at, id) and \
                      (created_at, thread_id, id)"
                .into(),
            definitions: vec![
                "CREATE INDEX posts_thread_visible_idx ON public.posts USING btree (thread_id, \
                 created_at, id) WHERE (visibility = 'visible'::text)"
                    .into(),
                "CREATE INDEX posts_thread_all_idx ON public.posts USING btree (created_at, \
                 thread_id, id)"
                    .into(),
            ],
        },
        Finding {
            kind: Kind::Invalid,
            read_path: "forum-page-first".into(),
            index: "threads_forum_listing_all_idx".into(),
            twin: None,
            problem: "threads_forum_listing_all_idx is not valid".into(),
            definitions: vec![],
        },
    ]
}

#[test]
fn lint_findings_fail_a_run_whose_checks_all_pass() {
    let mut r = report(vec![pass(
        "thread-page-first",
        "member",
        "posts_thread_visible_idx",
    )]);
    r.lint = findings();
    // The checks passed, and the summary says so; the findings alone fail the run.
    assert_eq!(r.summary(), summary(1, 0, 0, 0));
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::CHECK_FAILED);
    let text = table(&r);
    assert!(
        text.contains("\nindexes:\nthread-page-first: posts_thread_visible_idx and its twin"),
        "{text}"
    );
    assert!(
        text.ends_with("2 index problems (see \"indexes:\" above)\n"),
        "{text}"
    );
    insta::assert_snapshot!("lint_table", text);
    let doc = json_of(&r);
    assert_eq!(doc["lint"][0]["kind"], "twin-drift");
    assert_eq!(doc["lint"][1]["kind"], "invalid");
    insta::assert_json_snapshot!("lint_json", doc);

    // One finding is one problem.
    r.lint.truncate(1);
    assert!(
        table(&r).ends_with("1 index problem (see \"indexes:\" above)\n"),
        "{}",
        table(&r)
    );
}

#[test]
fn role_warnings_are_in_the_json() {
    let mut r = report(vec![pass(
        "thread-page-first",
        "member",
        "posts_thread_visible_idx",
    )]);
    r.role_warnings = vec![RoleRisk {
        right: "superuser".into(),
        what: "a superuser's SQL can write files and start programs on the server".into(),
    }];
    // A warning, not a failure.
    assert_eq!(plancheck::status(&r), 0);
    assert_eq!(
        json_of(&r)["role_warnings"],
        json!([{
            "right": "superuser",
            "what": "a superuser's SQL can write files and start programs on the server"
        }])
    );
}

// ----------------------------------------------------------------------------------------------
// A migration: before and after.

#[test]
fn a_migration_shows_each_check_before_and_after() {
    let checks = failing_checks();
    // After the migration: the member's listing still passes, the moderator's lost its index,
    // and a read path new with the migration passes (it did not run before).
    let after = vec![
        pass("forum-page-first", "member", "threads_forum_listing_idx"),
        checks[7].clone(),
        pass("new-read-path", "member", "posts_thread_visible_idx"),
    ];
    let before = vec![
        pass("forum-page-first", "member", "threads_forum_listing_idx"),
        pass(
            "forum-page-first",
            "moderator",
            "threads_forum_listing_all_idx",
        ),
    ];
    let mut r = report(after);
    r.before = Some(before);
    // The summary and the status are about after the migration.
    assert_eq!(r.summary(), summary(2, 1, 0, 0));
    assert_eq!(plancheck::status(&r), 1);
    let text = table(&r);
    assert!(text.contains("before → after migration"), "{text}");
    assert!(text.contains("pass → invalid-index"), "{text}");
    assert!(text.contains("(not run) → pass"), "{text}");
    insta::assert_snapshot!("migration_table", text);
    let doc = json_of(&r);
    assert_eq!(doc["checks"][1]["before"]["verdict"], "pass");
    // A check that did not run before has no `before`.
    assert!(doc["checks"][2].get("before").is_none(), "{doc:#}");
    insta::assert_json_snapshot!("migration_json", doc);

    // Without a migration there is no `before` anywhere and the column is `result`.
    r.before = None;
    let doc = json_of(&r);
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("before").is_none()),
        "{doc:#}"
    );
    let text = table(&r);
    let header = text.lines().nth(1).unwrap();
    assert!(header.contains("┆ result "), "{text}");
    assert!(!text.contains("before → after"), "{text}");
}

// ----------------------------------------------------------------------------------------------
// --explain.

/// An EXPLAIN (FORMAT JSON) document: a Limit over one scan of posts, through `index` or not.
fn plan_doc(index: Option<&str>, filter: &str) -> Value {
    let mut scan = json!({
        "Node Type": if index.is_some() { "Index Scan" } else { "Seq Scan" },
        "Parent Relationship": "Outer",
        "Relation Name": "posts",
        "Alias": "p",
        "Total Cost": if index.is_some() { 14.0 } else { 900.0 },
        "Plan Rows": 20,
        "Filter": filter
    });
    if let Some(index) = index {
        scan["Index Name"] = json!(index);
    }
    json!([{
        "Plan": {
            "Node Type": "Limit",
            "Total Cost": 40.5,
            "Plan Rows": 20,
            "Plans": [scan]
        }
    }])
}

#[test]
fn explain_ends_the_table_with_the_plan_each_verdict_is_about() {
    let checks = failing_checks();
    // generic-plan: the generic plan is shown, not the custom one.
    let mut generic = checks[4].clone();
    generic.plans = vec![
        (
            "custom".into(),
            plan_doc(Some("posts_body_search_idx"), "(body @@ 'rare'::tsquery)"),
        ),
        ("generic".into(), plan_doc(None, "(body @@ to_tsquery($1))")),
    ];
    // not-chosen: the custom plan, then the re-plan through the index.
    let mut not_chosen = checks[1].clone();
    not_chosen.plans = vec![
        ("custom".into(), plan_doc(None, "(author_id = 7)")),
        (
            "probe".into(),
            plan_doc(Some("posts_author_visible_idx"), "(author_id = 7)"),
        ),
    ];
    // A pass has no plan shown, even with its plans kept.
    let mut passing = pass("thread-page-first", "member", "posts_thread_visible_idx");
    passing.plans = not_chosen.plans.clone();
    let mut r = report(vec![passing, generic, not_chosen]);
    r.explain = true;
    let text = table(&r);
    assert!(
        text.contains(
            "\nsearch-rare [member] generic-plan, generic plan:\nLimit  (est. rows 20)\n└─ Seq \
             Scan on posts p"
        ),
        "{text}"
    );
    assert!(!text.contains("generic-plan, custom plan"), "{text}");
    assert!(
        text.contains("\nmember-profile [member] not-chosen, custom plan:\nLimit"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nmember-profile [member] the re-plan through posts_author_visible_idx (not run; \
             scan types disabled):\nLimit  (est. rows 20)\n└─ Index Scan using \
             posts_author_visible_idx on posts p"
        ),
        "{text}"
    );
    assert!(!text.contains("thread-page-first [member] pass,"), "{text}");
    insta::assert_snapshot!("explain_table", text);

    // Without --explain, no plan.
    r.explain = false;
    assert!(!table(&r).contains("custom plan:"), "{}", table(&r));
}
