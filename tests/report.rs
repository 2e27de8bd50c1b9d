//! The report renderers on hand-built reports, no database: the table people read and the JSON
//! machines read, for a pass, every failing verdict, a warning under `--require usable`, notes,
//! declared settings, lint findings, a migration's before and after, and `--explain`; and the
//! summary counts and exit status each report stands for.

use plancheck::db::role::RoleRisk;
use plancheck::lint::{Finding, Kind};
use plancheck::report::{Format, Report, Style, Summary, render};
use plancheck::verdict::{
    Budget, BudgetUsed, CheckResult, Relative, Require, Spread, Verdict, WarmStanding,
};
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
            p95: 0.5,
            p99: 0.5,
            min: 0.4,
            max: 0.5,
            runs: 5,
        }),
        discarded: Some(2),
        client_ms: None,
        planning_ms: Some(Spread {
            p50: 0.11,
            p95: 0.12,
            p99: 0.12,
            min: 0.1,
            max: 0.12,
            runs: 5,
        }),
        shared_buffers: Some(1234.0),
        connection_lost: false,
        at: None,
        notes: vec![],
        budget: Budget::default(),
        budget_used: None,
        usable: None,
        settled_by: verdict
            .is_pass()
            .then_some(plancheck::verdict::Settled::Plan),
        unsettled: None,
        large_reads: vec![],
        small_reads_only: false,
        read_in_calls: vec![],
        plan_changed: false,
        plan_diff: vec![],
        strict_plans: false,
        production: None,
        here: None,
        sort_keys: vec![],
        elapsed_ms: None,
        plans: vec![],
        settings: vec![],
        session: vec![],
        reads_past_policies: Vec::new(),
        changed_by: None,
        custom_verdict: None,
        unanalysed: vec![],
        at_guesses: None,
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
        locations: Default::default(),
        not_run: 0,
        migration_rewritten: Vec::new(),
        index_changes: Vec::new(),
        migration_hold: None,
        started: None,
    }
}

/// The table as a terminal wide enough for every column in full shows it, no colour.
fn table(report: &Report) -> String {
    table_at(report, 240)
}

fn table_at(report: &Report, width: usize) -> String {
    render(
        report,
        Format::Table,
        Style {
            width,
            color: false,
        },
    )
}

/// The JSON rendering, parsed (and checked to be one document ending in a newline).
/// Markdown's text as a reader sees it rendered: every text and code span, markup gone.
fn markdown_shown(markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser};
    Parser::new_ext(markdown, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Text(t) | Event::Code(t) => Some(t.into_string()),
            Event::SoftBreak | Event::HardBreak => Some("\n".to_string()),
            _ => None,
        })
        .collect()
}

fn json_of(report: &Report) -> Value {
    let text = render(report, Format::Json, Style::PLAIN);
    assert!(text.ends_with("}\n"), "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn summary(passed: usize, failed: usize, errors: usize, warnings: usize) -> Summary {
    Summary {
        passed,
        failed,
        errors,
        warnings,
        not_run: 0,
        index_problems: 0,
        no_statistics: 0,
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
        warm: Some(WarmStanding::Under),
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
        warm: Some(WarmStanding::Under),
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
            "0.42 ms",
            "1,234",
            "",
            "1% of 50 ms, 62% of 2,000 buf"
        ]
    );
    assert!(
        text.ends_with("\n1 check on PostgreSQL 15.8: 1 passed, 0 failed, 0 errors\n"),
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
        text.ends_with("\n9 checks on PostgreSQL 15.8: 0 passed, 8 failed, 1 error\n"),
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
        // The short reason, then the fix; the whole message under --explain.
        let brief = plancheck::report::brief::of(&c, Require::Chosen);
        let why = format!(
            "why:\n  {} [{}] {verdict}: {}\n{}",
            c.read_path,
            c.scope,
            brief.why,
            brief
                .fix
                .as_ref()
                .map(|fix| format!("    fix: {fix}\n"))
                .unwrap_or_default()
        );
        let explained = format!(
            "why:\n  {} [{}] {verdict}: {}\n",
            c.read_path, c.scope, c.message
        );
        let mut r = report(vec![c]);
        r.explain = true;
        let text = table(&r);
        assert!(
            text.contains(&explained),
            "{verdict}: no {explained:?} in\n{text}"
        );
        r.explain = false;
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
    // Columns: read path, scope, required index, result, warm p50, buffers, used instead,
    // budget used.
    // not-chosen: the index used instead.
    let not_chosen = row(&text, "member-profile", "member");
    assert_eq!(not_chosen.len(), 8, "{not_chosen:?}");
    assert_eq!(not_chosen[3], "not-chosen");
    assert_eq!(not_chosen[4..6], ["0.42 ms", "1,234"]);
    assert_eq!(
        not_chosen[6],
        "Bitmap Index Scan using posts_author_idx on posts"
    );
    assert_eq!(not_chosen[7], "");
    // seq-scan: the other scans, never the required index's own line.
    let seq_scan = row(&text, "discovery-latest", "member");
    assert_eq!(seq_scan[6], "Seq Scan on forums");
    // missing-index: everything the read path uses.
    let missing = row(&text, "moderation-queue", "moderator");
    assert_eq!(missing[6], "Seq Scan on posts");
    // over-budget: the index verdict passed, so nothing was used instead; the share of each
    // budget used.
    let over = row(&text, "forum-page-deep", "member");
    assert_eq!(over[6], "");
    assert_eq!(over[7], "4% of 50 ms, 3.4× of 2× forum-page-first");
    // error: no figures, and nothing in the cell meant for a plan's access paths (regression:
    // the whole message and its source snippet were there, and widened the table); the
    // message is under `why:`.
    let error = row(&text, "thread-page-deep", "moderator");
    assert_eq!(error[3], "error");
    assert_eq!(error[4..6], ["-", "-"]);
    assert_eq!(error[6], "");
    assert_eq!(error[7], "");
    assert!(
        text.contains(
            "\n  thread-page-deep [moderator] error: plans/thread-page-deep.sql:3:7: column \
             p.thred_id does not exist\n"
        ),
        "{text}"
    );
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
        text.ends_with("\n2 checks on PostgreSQL 15.8: 1 passed, 0 failed, 0 errors, 1 warning\n"),
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
            "\nsettings applied (settings = {…}, and what setup changed):\n  [member] \
             enable_seqscan = off, random_page_cost = 1.1\n\n"
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

// Regression: a setup line (`SET LOCAL TIME ZONE 'UTC'`) could turn a not-chosen into a pass,
// and neither the table nor the JSON said it was there; declared settings were missing from
// JUnit, Markdown and GitHub output.
#[test]
fn what_a_scope_applied_is_shown_in_every_format() {
    let mut a = pass("thread-page-first", "member", "posts_thread_visible_idx");
    a.settings = vec![("random_page_cost".to_string(), "1.1".to_string())];
    a.session = vec![("timezone".to_string(), "UTC".to_string())];
    let r = report(vec![a]);
    for format in [
        Format::Table,
        Format::Json,
        Format::Junit,
        Format::Markdown,
        Format::Github,
    ] {
        let mut text = render(&r, format, Style::PLAIN);
        if format == Format::Markdown {
            // As a reader sees it: the escapes gone.
            text = markdown_shown(&text);
        }
        assert!(
            text.contains("random_page_cost") && text.contains("1.1"),
            "{format:?}: {text}"
        );
        assert!(
            text.contains("timezone") && text.contains("UTC"),
            "{format:?}: {text}"
        );
    }
    assert_eq!(
        json_of(&r)["checks"][0]["session_settings"],
        json!({"timezone": "UTC"})
    );
}

fn findings() -> Vec<Finding> {
    vec![
        Finding {
            kind: Kind::TwinDrift,
            read_path: "thread-page-deep".into(),
            read_paths: vec!["thread-page-deep".into(), "thread-page-first".into()],
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
            read_paths: vec!["forum-page-first".into()],
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
    assert_eq!(
        r.summary(),
        Summary {
            index_problems: 2,
            ..summary(1, 0, 0, 0)
        }
    );
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::CHECK_FAILED);
    let text = table(&r);
    assert!(
        text.contains(
            "\nindexes:\nthread-page-deep, thread-page-first: posts_thread_visible_idx and its \
             twin"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(": 1 passed, 0 failed, 0 errors, 2 index problems\n"),
        "{text}"
    );
    insta::assert_snapshot!("lint_table", text);
    let doc = json_of(&r);
    assert_eq!(doc["lint"][0]["kind"], "twin-drift");
    assert_eq!(doc["lint"][1]["kind"], "invalid");
    insta::assert_json_snapshot!("lint_json", doc);

    // One finding is one problem.
    r.lint.truncate(1);
    assert!(table(&r).ends_with(", 1 index problem\n"), "{}", table(&r));
}

#[test]
fn role_warnings_are_in_every_report() {
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
    // What stderr says once (and -q silences) every report keeps, each right with what it
    // lets SQL do.
    let what = "a superuser's SQL can write files and start programs on the server";
    let markdown = render(&r, Format::Markdown, Style::PLAIN);
    assert!(
        markdown_shown(&markdown).contains(&format!("superuser: {what}")),
        "{markdown}"
    );
    let github = render(&r, Format::Github, Style::PLAIN);
    assert!(
        github.contains(&format!(
            "::warning title=plancheck%3A the role has superuser::{what}\n"
        )),
        "{github}"
    );
    let xml = render(&r, Format::Junit, Style::PLAIN);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert!(
        doc.descendants()
            .filter(|n| n.has_tag_name("system-out"))
            .any(|n| n.text().unwrap_or_default()
                == format!("warning: the role has superuser: {what}")),
        "{xml}"
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
    // The header reads as one phrase at any width: a column's, or in the expanded form (a
    // record per check, where no table fits) a line's.
    for width in [60, 80, 100, 120] {
        let text = table_at(&r, width);
        assert!(
            text.contains("┆ before → after migration ┆")
                || text.contains("┆ before → after migration │\n")
                || (cells(text.lines().next().unwrap())[..2]
                    == ["read path [scope]", "before → after migration"]
                    && text
                        .lines()
                        .any(|l| cells(l)
                            == ["forum-page-first [moderator]", "pass → invalid-index"])),
            "{text}"
        );
    }
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
fn plan_doc(index: Option<&str>, filter: &str) -> plancheck::measure::Document {
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
    plancheck::measure::Document::new(json!([{
        "Plan": {
            "Node Type": "Limit",
            "Total Cost": 40.5,
            "Plan Rows": 20,
            "Plans": [scan]
        }
    }]))
    .unwrap()
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

// ----------------------------------------------------------------------------------------------
// The table fitted to the terminal.

/// A check of the reference project: read path, scope, index, warm p50, shared buffers, warm
/// budget, buffers budget, and the read path a relative budget compares with.
type Reference = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
    f64,
    f64,
    Option<&'static str>,
);

/// The reference project's report as the demo prints it: twelve passing checks, each with its
/// budgets, its warm p50 and its shared buffers.
fn reference_like() -> Report {
    #[rustfmt::skip]
    let rows: [Reference; 12] = [
        ("discovery-latest", "member", "threads_latest_idx", 0.02, 7.0, 150.0, 400.0, None),
        ("forum-page-deep", "member", "threads_forum_listing_idx", 0.05, 68.0, 60.0, 400.0, Some("forum-page-first")),
        ("forum-page-deep", "moderator", "threads_forum_listing_all_idx", 0.05, 68.0, 60.0, 400.0, Some("forum-page-first")),
        ("forum-page-first", "member", "threads_forum_listing_idx", 0.06, 69.0, 50.0, 400.0, None),
        ("forum-page-first", "moderator", "threads_forum_listing_all_idx", 0.05, 69.0, 50.0, 400.0, None),
        ("member-profile", "member", "posts_author_visible_idx", 0.14, 11.0, 60.0, 400.0, None),
        ("moderation-queue", "moderator", "posts_forum_visibility_idx", 0.05, 52.0, 50.0, 400.0, None),
        ("search-rare", "member", "posts_body_search_idx", 0.07, 51.0, 200.0, 4000.0, None),
        ("thread-page-deep", "member", "posts_thread_visible_idx", 0.06, 83.0, 60.0, 400.0, Some("thread-page-first")),
        ("thread-page-deep", "moderator", "posts_thread_all_idx", 0.06, 83.0, 60.0, 400.0, Some("thread-page-first")),
        ("thread-page-first", "member", "posts_thread_visible_idx", 0.06, 80.0, 50.0, 400.0, None),
        ("thread-page-first", "moderator", "posts_thread_all_idx", 0.05, 80.0, 50.0, 400.0, None),
    ];
    let checks = rows
        .iter()
        .map(
            |&(rp, scope, index, warm, buffers, warm_budget, buffer_budget, to)| {
                let mut c = pass(rp, scope, index);
                c.warm_ms = Some(Spread {
                    p50: warm,
                    p95: warm,
                    p99: warm,
                    min: warm,
                    max: warm,
                    runs: 5,
                });
                c.shared_buffers = Some(buffers);
                c.budget = Budget {
                    warm_ms: Some(warm_budget),
                    buffers: Some(buffer_budget),
                    relative: to.map(|to| Relative {
                        to: to.into(),
                        scope: None,
                        max_ratio: 2.0,
                    }),
                };
                c.budget_used = Some(BudgetUsed {
                    warm_ms: Some(warm / warm_budget),
                    warm: Some(WarmStanding::Under),
                    buffers: Some(buffers / buffer_budget),
                    ratio: to.map(|_| 1.0),
                });
                c
            },
        )
        .collect();
    let mut r = report(checks);
    r.server_version = "15.18 (Debian 15.18-0+deb12u1)".into();
    r
}

/// The lines of the table, or of the list a narrower width gets (a line per check), without what
/// follows it.
fn table_lines(text: &str) -> Vec<&str> {
    text.lines().take_while(|l| !l.is_empty()).collect()
}

/// The cells of a line of the list, apart by two spaces or more.
fn cells(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// Whether `name` is a word of `line` whole: between spaces, cell borders, or the brackets and
/// colon around a scope and a verdict.
fn whole_in(line: &str, name: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || "│┆[]:".contains(c))
        .any(|w| w == name)
}

/// `text` with every run of spaces and line breaks one space: wrapped text as one line.
fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn widest(lines: &[&str]) -> usize {
    lines.iter().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn the_reference_table_fits_80_100_and_120_columns_and_loses_nothing() {
    let r = reference_like();
    for width in [80, 100, 120] {
        let text = table_at(&r, width);
        let lines = table_lines(&text);
        assert!(
            widest(&lines) <= width,
            "{} columns wide at {width}:\n{text}",
            widest(&lines)
        );
        for c in &r.checks {
            // Identifiers whole, on one line.
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(&format!(" {} ", c.required_index))),
                "{width}: {} broken:\n{text}",
                c.required_index
            );
            // The budget figures in full, in the table or under it.
            let budget = format!(
                "{}% of {} ms",
                (100.0 * c.budget_used.as_ref().unwrap().warm_ms.unwrap()).round(),
                c.budget.warm_ms.unwrap()
            );
            assert!(text.contains(&budget), "{width}: no {budget:?} in\n{text}");
        }
        assert!(text.contains("1.0× of 2× forum-page-first"), "{text}");
        insta::assert_snapshot!(format!("reference_table_{width}"), text);
    }
    // Wide enough, every figure has a column of its own and nothing is said under the table.
    let text = table_at(&r, 200);
    assert!(text.contains("┆ budget used "), "{text}");
    assert!(!text.contains("\nbudget used"), "{text}");
    // At 120 (a CI log) the warm time and buffers keep their columns; the budgets go under.
    let text = table_at(&r, 120);
    assert!(text.contains("┆ warm p50 ┆ buffers ┆"), "{text}");
    assert!(
        text.contains(
            "\nbudget used (time: warm p50 of 5 runs after 2 discarded):\n  discovery-latest \
             [member]:      0% of 150 ms, 2% of 400 buf\n"
        ),
        "{text}"
    );
}

#[test]
fn a_failing_table_keeps_every_identifier_whole_and_says_everything_at_any_width() {
    // The reference report with four checks failing in four ways.
    let mut r = reference_like();
    let failing = failing_checks();
    for f in [0, 1, 6, 8].map(|i| failing[i].clone()) {
        let at = r
            .checks
            .iter()
            .position(|c| c.read_path == f.read_path && c.scope == f.scope)
            .unwrap();
        r.checks[at] = f;
    }
    for width in (40..=240).step_by(20) {
        let text = table_at(&r, width);
        let lines = table_lines(&text);
        // The sentences under the table are wrapped at spaces to the width: read them unwrapped.
        let said = unwrapped(&text);
        // A list narrower than its one-line form names no pass's index (passes are compact).
        let passes_indexed = text.starts_with('┌') || lines[0].contains("  required index");
        for c in &r.checks {
            let index = (passes_indexed || !c.verdict.is_pass()).then_some(&c.required_index);
            for name in [Some(&c.read_path), Some(&c.scope), index]
                .into_iter()
                .flatten()
            {
                assert!(
                    lines.iter().any(|l| whole_in(l, name)),
                    "{width}: {name} broken:\n{text}"
                );
            }
            // What was used instead, as the plan names it: in its column or under `why:`.
            for instead in &c.instead {
                assert!(
                    said.contains(&unwrapped(instead)),
                    "{width}: no {instead:?}\n{text}"
                );
            }
            // The short reason and its fix; the whole message under --explain.
            if !c.verdict.is_pass() {
                let brief = plancheck::report::brief::of(c, r.require);
                assert!(
                    said.contains(&unwrapped(&brief.why)),
                    "{width}: no why of {c:?}\n{text}"
                );
                if let Some(fix) = &brief.fix {
                    assert!(
                        said.contains(&unwrapped(fix)),
                        "{width}: no fix of {c:?}\n{text}"
                    );
                }
                let mut explained = r.clone();
                explained.explain = true;
                let text = table_at(&explained, width);
                assert!(
                    unwrapped(&text).contains(&unwrapped(&c.message)),
                    "{width}: no message of {c:?} under --explain\n{text}"
                );
            }
        }
        // Where no table fits, the list fits: every line within the width.
        if !text.starts_with('┌') {
            assert!(widest(&lines) <= width, "{width}:\n{text}");
        }
        // The table is as wide as the width allows, or as narrow as unbroken names allow.
        let narrowest = 1 + [17, 9, 29, 13, 20].iter().map(|w| w + 3).sum::<usize>();
        assert!(
            widest(&lines) <= width.max(narrowest),
            "{} columns at {width}:\n{text}",
            widest(&lines)
        );
    }
    // At 100 columns no table of these names with a `used instead` column fits (104 at the
    // narrowest): the column goes, and what each failing check used instead is under `why:`.
    let text = table_at(&r, 100);
    assert!(text.starts_with('┌'), "{text}");
    assert!(!table_lines(&text)[1].contains("used instead"), "{text}");
    assert!(widest(&table_lines(&text)) <= 100, "{text}");
    let why = unwrapped(text.split("\nwhy:\n").nth(1).unwrap());
    for c in r.checks.iter().filter(|c| !c.instead.is_empty()) {
        assert!(
            why.contains(&unwrapped(&c.instead.join("; "))),
            "no {:?} under why:\n{text}",
            c.instead
        );
    }
    // At 80 not even that fits (81 at the narrowest): a line per check, the failures first,
    // under a heading.
    let text = table_at(&r, 80);
    let lines = table_lines(&text);
    assert_eq!(
        lines[0], "read path [scope]              result         required index",
        "{text}"
    );
    assert_eq!(lines.len(), 1 + r.checks.len(), "{text}");
    assert_eq!(
        lines[1], "member-profile [member]        not-chosen     posts_author_visible_idx",
        "{text}"
    );
    assert!(widest(&lines) <= 80, "{text}");
    let text = table_at(&r, 110);
    // The index used instead, compactly, in its column; the plan line under `why:`.
    let not_chosen = row(&text, "member-profile", "member");
    assert_eq!(not_chosen.last().unwrap(), "posts_author_idx", "{text}");
    assert!(
        text.contains(
            "\n  member-profile [member] not-chosen: posts_author_visible_idx can serve this \
             SQL, but at these statistics the\n    planner chose Bitmap Index Scan using \
             posts_author_idx on posts\n    fix: "
        ),
        "{text}"
    );
    // missing-index says what the read path uses now, in the column meant for it.
    let missing = row(&text, "moderation-queue", "moderator");
    assert_eq!(missing[3], "missing-index");
    assert_eq!(missing.last().unwrap(), "Seq Scan on posts", "{text}");
    insta::assert_snapshot!("failing_table_110", text);
}

/// Every check the table shows, in its order, as (read path, scope, result cell), from a table
/// (its rows, a wrapped cell joined again) or from the list a narrower width gets
/// (`read-path [scope]  result  index`).
fn shown_checks(text: &str) -> Vec<(String, String, String)> {
    let lines = table_lines(text);
    if text.starts_with('┌') {
        let mut rows: Vec<Vec<String>> = Vec::new();
        let body = lines.iter().skip_while(|l| !l.starts_with('╞')).skip(1);
        for line in body.filter(|l| l.starts_with('│')) {
            let cells: Vec<String> = line
                .trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect();
            match rows.last_mut() {
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
        return rows
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone(), r[3].clone()))
            .collect();
    }
    // The list: a line per check (`read-path [scope]  result  index`), its index perhaps on
    // the next line, four columns in, or the line wrapped at spaces; the result is the verdict
    // words after the scope.
    const RESULT_WORDS: &[&str] = &[
        "pass",
        "not-usable",
        "not-chosen",
        "generic-plan",
        "seq-scan",
        "key-unused",
        "over-budget",
        "plan-changed",
        "missing-index",
        "invalid-index",
        "no-statistics",
        "error",
        "(warning)",
    ];
    let mut entries: Vec<String> = Vec::new();
    for line in lines {
        match entries.last_mut() {
            // A line wrapped at spaces, or an index on the line under its check.
            Some(last) if line.starts_with(' ') => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => entries.push(line.to_string()),
        }
    }
    entries
        .iter()
        .skip(1)
        .map(|l| {
            let (read_path, rest) = l.split_once(" [").expect("read-path [scope]");
            let (scope, rest) = rest.split_once(']').expect("[scope]");
            let result: Vec<&str> = rest
                .split_whitespace()
                .take_while(|w| RESULT_WORDS.contains(w))
                .collect();
            (read_path.to_string(), scope.to_string(), result.join(" "))
        })
        .collect()
}

#[test]
fn the_table_shows_each_check_once_with_its_verdict_failures_first_then_warnings_then_passes() {
    // Reordering and compacting may never lose a check, nor show a verdict against the wrong
    // read path or scope: a false pass.
    let mut with_no_statistics = everything();
    with_no_statistics.checks.insert(3, no_statistics());
    let mut reference_failing = reference_like();
    reference_failing.checks[4] = failing_checks()[1].clone();
    reference_failing.checks[9] = failing_checks()[8].clone();
    for r in [
        everything(),
        with_no_statistics,
        failing_with_every_section(),
        reference_failing,
        reference_like(),
    ] {
        let rank = |c: &CheckResult| {
            if c.verdict.is_pass() {
                2
            } else if c.is_warning(r.require) || c.verdict == Verdict::NoStatistics {
                1
            } else {
                0
            }
        };
        // The report's checks, each with the result cell it must show, stably in groups.
        let mut expected: Vec<(usize, (String, String, String))> = r
            .checks
            .iter()
            .map(|c| {
                let result = if c.is_warning(r.require) {
                    format!("{} (warning)", c.verdict)
                } else {
                    c.verdict.to_string()
                };
                (rank(c), (c.read_path.clone(), c.scope.clone(), result))
            })
            .collect();
        expected.sort_by_key(|(rank, _)| *rank);
        let expected: Vec<_> = expected.into_iter().map(|(_, c)| c).collect();
        let mut forms = std::collections::BTreeSet::new();
        for width in [40, 60, 80, 100, 120, 240] {
            let text = table_at(&r, width);
            forms.insert(text.starts_with('┌'));
            assert_eq!(shown_checks(&text), expected, "{width}:\n{text}");
            // `why:` follows the same order, and names every check that did not pass.
            if let Some(why) = text.split("\nwhy:\n").nth(1) {
                let named: Vec<(String, String)> = why
                    .lines()
                    .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
                    .filter_map(|l| {
                        let (rp, rest) = l.trim().split_once(" [")?;
                        Some((rp.to_string(), rest.split_once(']')?.0.to_string()))
                    })
                    .collect();
                let failing: Vec<(String, String)> = expected
                    .iter()
                    .filter(|(_, _, v)| v != "pass")
                    .map(|(rp, s, _)| (rp.clone(), s.clone()))
                    .collect();
                assert_eq!(named, failing, "{width}:\n{text}");
            }
        }
        // Both forms were read: a table at some width, the list at another.
        assert_eq!(forms.len(), 2, "{:?}", r.checks.len());
        // The machines' formats keep the report's order.
        let json = json_of(&r);
        let order: Vec<(String, String)> = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["read_path"].as_str().unwrap().to_string(),
                    c["scope"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let report_order: Vec<(String, String)> = r
            .checks
            .iter()
            .map(|c| (c.read_path.clone(), c.scope.clone()))
            .collect();
        assert_eq!(order, report_order);
    }
}

#[test]
fn colour_marks_each_verdict_and_only_when_asked() {
    let checks = failing_checks();
    let mut r = report(vec![
        pass("thread-page-first", "member", "posts_thread_visible_idx"),
        checks[1].clone(),
        checks[6].clone(),
    ]);
    r.require = Require::Usable;
    let plain = table_at(&r, 120);
    assert!(!plain.contains('\x1b'), "{plain}");
    let coloured = render(
        &r,
        Format::Table,
        Style {
            width: 120,
            color: true,
        },
    );
    // Green pass, yellow warning (not-chosen, usable), red failure: in the table (comfy-table's
    // cell colours, the terminal's palette colours 2, 3 and 1, the cell's padding inside) and
    // under why.
    assert!(coloured.contains("┆\x1b[38;5;2m pass "), "{coloured:?}");
    assert!(
        coloured.contains("┆\x1b[38;5;3m not-chosen (warning) \x1b[39m┆"),
        "{coloured:?}"
    );
    assert!(
        coloured.contains("┆\x1b[38;5;1m missing-index "),
        "{coloured:?}"
    );
    assert!(
        coloured.contains("moderation-queue [moderator] \x1b[31mmissing-index\x1b[0m:"),
        "{coloured:?}"
    );
    // The same table once the escapes are taken out.
    let stripped = regex::Regex::new("\x1b\\[[0-9;]*m")
        .unwrap()
        .replace_all(&coloured, "");
    assert_eq!(stripped, plain);
    // However narrow the table, the result is painted (here the fourth and last column).
    let narrow = render(
        &reference_like(),
        Format::Table,
        Style {
            width: 80,
            color: true,
        },
    );
    assert_eq!(
        narrow.matches("┆\x1b[38;5;2m pass   \x1b[39m│").count(),
        12,
        "{narrow}"
    );
    // Machine formats never carry colour.
    for format in [
        Format::Json,
        Format::Junit,
        Format::Github,
        Format::Markdown,
    ] {
        let text = render(
            &r,
            format,
            Style {
                width: 120,
                color: true,
            },
        );
        assert!(!text.contains('\x1b'), "{format:?}: {text}");
    }
}

// ----------------------------------------------------------------------------------------------
// JUnit, GitHub, Markdown.

/// Every kind of check in one report: passes, each failing verdict, a warning, an index
/// problem, a migration's before; plans on two of them; expectation files located.
fn everything() -> Report {
    let mut checks = failing_checks();
    checks[0].plans = vec![(
        "custom".into(),
        plan_doc(
            Some("posts_thread_all_idx"),
            "(p.visibility <> 'deleted'::text)",
        ),
    )];
    checks[4].plans = vec![
        (
            "custom".into(),
            plan_doc(Some("posts_body_search_idx"), "(body @@ 'rare'::tsquery)"),
        ),
        ("generic".into(), plan_doc(None, "(body @@ to_tsquery($1))")),
    ];
    let mut warning = checks[1].clone();
    warning.scope = "guest".into();
    let mut all = vec![
        pass("thread-page-first", "moderator", "posts_thread_all_idx"),
        warning,
    ];
    all.extend(checks);
    let mut r = report(all);
    r.require = Require::Usable;
    r.lint = findings()[..1].to_vec();
    for c in &r.checks {
        r.locations.insert(
            (c.read_path.clone(), c.scope.clone()),
            plancheck::report::Location {
                path: format!("expectations/{}.toml", c.read_path),
                line: Some(if c.scope == "member" { 4 } else { 9 }),
            },
        );
    }
    r
}

#[test]
fn junit_is_a_testcase_per_read_path_and_scope() {
    // The not-chosen checks are usable: under --require usable, reported, not failed.
    let xml = render(&everything(), Format::Junit, Style::PLAIN);
    insta::assert_snapshot!("junit", xml);
}

#[test]
fn the_junit_file_is_well_formed_and_counts_what_the_json_summary_counts() {
    for r in [everything(), reference_like(), report(failing_checks())] {
        let xml = render(&r, Format::Junit, Style::PLAIN);
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
        let summary = json_of(&r)["summary"].clone();
        let lint = r.lint.len();
        let suites: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        // A suite per read path, in the report's order (the lint's read paths after).
        let mut read_paths: Vec<&str> = Vec::new();
        for name in r
            .checks
            .iter()
            .map(|c| c.read_path.as_str())
            .chain(r.lint.iter().map(|f| f.read_path.as_str()))
        {
            if !read_paths.contains(&name) {
                read_paths.push(name);
            }
        }
        let suite_names: Vec<&str> = suites
            .iter()
            .map(|s| s.attribute("name").unwrap())
            .collect();
        assert_eq!(suite_names, read_paths, "{xml}");
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
        let n = |k: &str| summary[k].as_u64().unwrap() as usize;
        // A testcase per check (passed, failed, errors, warnings), and one per index problem.
        assert_eq!(
            cases.len(),
            n("passed") + n("failed") + n("errors") + n("warnings") + lint
        );
        assert_eq!(cases.len(), r.checks.len() + lint);
        // A failure per failed check and per index problem; an error per error; a warning is
        // neither: it is skipped, as a verdict without statistics is.
        assert_eq!(count("failure"), n("failed") + lint, "{xml}");
        assert_eq!(count("error"), n("errors"), "{xml}");
        let no_statistics = summary["no_statistics"].as_u64().unwrap_or(0) as usize;
        assert_eq!(count("skipped"), n("warnings") + no_statistics, "{xml}");
        let total = |attribute: &str| -> usize {
            suites
                .iter()
                .map(|s| s.attribute(attribute).unwrap().parse::<usize>().unwrap())
                .sum()
        };
        assert_eq!(total("tests"), cases.len());
        assert_eq!(total("failures"), n("failed") + lint);
        assert_eq!(total("skipped"), count("skipped"), "{xml}");
        assert_eq!(total("errors"), n("errors"));
        let all = doc.root_element();
        assert_eq!(
            all.attribute("tests"),
            Some(cases.len().to_string().as_str())
        );
        // classname the read path, name `read-path [scope]`, in the report's order.
        let mut named: Vec<(String, String)> = cases
            .iter()
            .filter(|c| !c.attribute("name").unwrap().starts_with("index "))
            .map(|c| {
                (
                    c.attribute("classname").unwrap().to_string(),
                    c.attribute("name").unwrap().to_string(),
                )
            })
            .collect();
        let mut expected: Vec<(String, String)> = r
            .checks
            .iter()
            .map(|c| {
                (
                    c.read_path.clone(),
                    format!("{} [{}]", c.read_path, c.scope),
                )
            })
            .collect();
        named.sort();
        expected.sort();
        assert_eq!(named, expected);
    }
    // A warning is a skipped testcase saying it is a warning (a CI test view shows it apart
    // from the passes), the whole reason in its system-out.
    let xml = render(&everything(), Format::Junit, Style::PLAIN);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let warning = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase") && n.attribute("name") == Some("member-profile [guest]")
        })
        .unwrap_or_else(|| panic!("{xml}"));
    let skipped = warning
        .children()
        .find(|n| n.has_tag_name("skipped"))
        .unwrap_or_else(|| panic!("a warning not skipped:\n{xml}"));
    assert!(
        skipped
            .attribute("message")
            .unwrap()
            .starts_with("warning: member-profile [guest] not-chosen: "),
        "{xml}"
    );
    assert_eq!(skipped.attribute("type"), Some("not-chosen"));
    let out = warning
        .children()
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .unwrap_or_default();
    assert!(out.contains("warning (does not fail the run): "), "{xml}");
    // An index finding that fails nothing (a key direction no plan settled) is a warning too.
    let mut r = report(vec![pass(
        "thread-page-first",
        "member",
        "posts_thread_visible_idx",
    )]);
    r.lint = vec![Finding {
        kind: Kind::KeyDirection,
        problem: "posts_thread_visible_idx and its twin posts_thread_all_idx differ in key \
                  direction only: …; not settled from the catalog"
            .into(),
        ..findings().remove(0)
    }];
    assert_eq!(plancheck::status(&r), 0);
    let xml = render(&r, Format::Junit, Style::PLAIN);
    assert!(
        xml.contains(
            "<skipped message=\"warning: thread-page-deep, thread-page-first: \
             posts_thread_visible_idx and its twin posts_thread_all_idx differ in key direction \
             only"
        ),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");
    // Passes stay plain passes (the demo's report, read by junitparser in CI, is all passes).
    let xml = render(&reference_like(), Format::Junit, Style::PLAIN);
    assert!(
        !xml.contains("<skipped") && !xml.contains("<failure"),
        "{xml}"
    );

    // A failure's message is the why: line, its body the plan the verdict is about.
    let xml = render(&everything(), Format::Junit, Style::PLAIN);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("classname") == Some("search-rare"))
        .and_then(|c| c.children().find(|n| n.has_tag_name("failure")))
        .unwrap();
    assert!(
        failure
            .attribute("message")
            .unwrap()
            .starts_with("search-rare [member] generic-plan: the custom plan uses"),
        "{xml}"
    );
    assert_eq!(failure.attribute("type"), Some("generic-plan"));
    assert!(
        failure
            .text()
            .unwrap()
            .starts_with("generic plan:\nLimit  (est. rows 20)\n└─ Seq Scan on posts p"),
        "{xml}"
    );
}

#[test]
fn github_annotations_point_at_the_scope_of_each_failing_expectation() {
    let mut r = everything();
    let text = render(&r, Format::Github, Style::PLAIN);
    // A warning is a warning; a pass says nothing; the rest are errors on their scope's line.
    assert!(
        text.starts_with(
            "::warning file=expectations/member-profile.toml,line=9,title=plancheck%3A \
             member-profile [guest] not-chosen::posts_author_visible_idx is usable but not \
             chosen: the chosen plan costs 12.50; a plan using posts_author_visible_idx costs \
             14.00%0Aused instead: Bitmap Index Scan using posts_author_idx on posts%0Afix: on \
             production-like data, ANALYZE the tables and compare the plans' costs (--explain)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("[moderator] pass"), "{text}");
    assert!(
        text.contains(
            "\n::error file=expectations/moderation-queue.toml,line=9,title=plancheck%3A \
             moderation-queue [moderator] missing-index::no index posts_forum_visibility_idx on \
             this database%0Aused instead: Seq Scan on posts%0Afix: correct the index's name in \
             the expectation, or create the index (did a migration drop it?)\n"
        ),
        "{text}"
    );
    // Seven failures, an error, an index problem.
    assert_eq!(text.matches("::error ").count(), 9, "{text}");
    assert_eq!(text.matches("::warning ").count(), 2, "{text}");
    assert!(
        text.ends_with(
            "\n11 checks on PostgreSQL 15.8: 1 passed, 7 failed, 1 error, 2 warnings, 1 index problem\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!("github", text);

    // Regression: "used instead" twice, the message's own (with the rows a filter removed) and
    // an appended line of the same access paths.
    let mut c = failing_checks()[0].clone();
    c.instead = vec![
        "Parallel Seq Scan on posts".into(),
        "Index Scan using members_pkey on members".into(),
    ];
    c.message = "posts_thread_visible_idx cannot serve this SQL: … posts_thread_visible_idx is \
                 not in the plan; used instead: Parallel Seq Scan on posts (116,454 rows \
                 removed by filter); Index Scan using members_pkey on members"
        .into();
    let once = render(&report(vec![c.clone()]), Format::Github, Style::PLAIN);
    assert_eq!(once.matches("used instead").count(), 1, "{once}");
    // A message that names only some of them gets the line.
    c.message = "posts_thread_visible_idx cannot serve this SQL: … used instead: Parallel Seq \
                 Scan on posts"
        .into();
    let both = render(&report(vec![c]), Format::Github, Style::PLAIN);
    assert!(
        both.contains(
            "%0Aused instead: Parallel Seq Scan on posts; Index Scan using members_pkey on members"
        ),
        "{both}"
    );

    // Without a location (`judge`, the built-in project), the annotation has no file.
    r.locations.clear();
    let text = render(&r, Format::Github, Style::PLAIN);
    assert!(
        text.contains("\n::error title=plancheck%3A moderation-queue [moderator] missing-index::"),
        "{text}"
    );
    // A pass alone annotates nothing.
    let text = render(&reference_like(), Format::Github, Style::PLAIN);
    assert!(!text.contains("::"), "{text}");
}

#[test]
fn markdown_is_the_evidence_table_and_the_budgets_table() {
    let text = render(&reference_like(), Format::Markdown, Style::PLAIN);
    assert!(
        text.contains(
            "\n| Read path [scope] | Required index | Verdict (used instead) | Warm p50 |\n\
             |---|---|---|---|\n| discovery-latest [member] | `threads_latest_idx` | pass | 0.02 \
             ms |\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\n| Read path [scope] | Time budget | Warm p50 | Fastest | Slowest | p95 | p99 | Runs \
             | Budget used | p50 against the budget | Round trip p50 |\n\
             |---|---|---|---|---|---|---|---|---|---|---|\n| discovery-latest [member] | 150 ms \
             | 0.02 ms | 0.02 ms | 0.02 ms | - | - | 5 | 0% | within | - |\n"
        ),
        "{text}"
    );
    // Under the time budgets, what their figures measure.
    assert!(
        text.contains(
            "\nWarm p50, Fastest, Slowest, p95, p99: the server's execution time (EXPLAIN \
             ANALYZE)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Round trip p50: the plain statement (not EXPLAIN) as the client saw it, as many \
             runs, from the request sent to its last row"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\n| Read path [scope] | Buffer budget | Measured | Budget used |\n|---|---|---|---|\n\
             | discovery-latest [member] | 400 buf | 7 buf | 2% |\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "| forum-page-deep [member] | 2× forum-page-first's buffers | 1.0× forum-page-first's \
             | 50% |\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!("markdown_reference", text);

    // A budgets table of the checks with budgets only; failures say why.
    let text = render(&everything(), Format::Markdown, Style::PLAIN);
    assert!(
        text.contains(
            "|---|---|---|---|---|---|---|---|---|---|---|\n| forum-page-deep [member] | 50 ms | \
             0.42 ms | 0.40 ms | 0.50 ms | - | - | 5 | 4% | within | - |\n\nWarm p50, Fastest"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\n| Read path [scope] | Buffer budget | Measured | Budget used |\n|---|---|---|---|\n\
             | forum-page-deep [member] | 2× forum-page-first's buffers | 3.4× forum-page-first's \
             | 170% |\n\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "| moderation-queue [moderator] | `posts_forum_visibility_idx` | **missing-index**: \
             Seq Scan on posts | 0.42 ms |\n"
        ),
        "{text}"
    );
    insta::assert_snapshot!("markdown_failing", text);

    // As a Markdown reader renders it: every table has a header for each of its columns.
    for r in [reference_like(), everything()] {
        let text = render(&r, Format::Markdown, Style::PLAIN);
        let mut headers: Vec<Vec<String>> = Vec::new();
        let mut in_head = false;
        let mut cell: Option<String> = None;
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        for e in Parser::new_ext(&text, Options::ENABLE_TABLES) {
            match e {
                Event::Start(Tag::TableHead) => {
                    in_head = true;
                    headers.push(Vec::new());
                }
                Event::End(TagEnd::TableHead) => in_head = false,
                Event::Start(Tag::TableCell) if in_head => cell = Some(String::new()),
                Event::Text(t) | Event::Code(t) if in_head => {
                    if let Some(c) = cell.as_mut() {
                        c.push_str(&t);
                    }
                }
                Event::End(TagEnd::TableCell) if in_head => headers
                    .last_mut()
                    .unwrap()
                    .push(cell.take().unwrap_or_default()),
                _ => {}
            }
        }
        assert!(headers.len() >= 3, "{headers:?}\n{text}");
        for h in &headers {
            assert!(
                h.iter().all(|c| !c.trim().is_empty()),
                "an untitled column: {h:?}"
            );
            assert!(!h.contains(&"Page".to_string()), "{h:?}");
            assert_eq!(h[0], "Read path [scope]", "{h:?}");
        }
    }
}

#[test]
fn junit_carries_each_check_s_time_file_and_line_and_the_run_s_timestamp() {
    let mut r = everything();
    r.started = Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_670_000));
    for (i, c) in r.checks.iter_mut().enumerate() {
        c.elapsed_ms = Some(250.0 * (i + 1) as f64);
    }
    let xml = render(&r, Format::Junit, Style::PLAIN);
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let first = &r.checks[0];
    let case = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase")
                && n.attribute("name")
                    == Some(format!("{} [{}]", first.read_path, first.scope).as_str())
        })
        .unwrap_or_else(|| panic!("{xml}"));
    assert_eq!(case.attribute("time"), Some("0.250"), "{xml}");
    let at = r
        .locations
        .get(&(first.read_path.clone(), first.scope.clone()))
        .expect("everything() locates its checks");
    assert_eq!(case.attribute("file"), Some(at.path.as_str()), "{xml}");
    assert_eq!(
        case.attribute("line").map(str::to_string),
        at.line.map(|l| l.to_string()),
        "{xml}"
    );
    // The run's timestamp on the report and each suite; the report's time is every check's.
    let root = doc.root_element();
    assert!(
        root.attribute("timestamp")
            .is_some_and(|t| t.starts_with("2025-12-02T")),
        "{xml}"
    );
    let total: f64 = (1..=r.checks.len()).map(|i| 0.25 * i as f64).sum();
    assert_eq!(
        root.attribute("time"),
        Some(format!("{total:.3}").as_str()),
        "{xml}"
    );
    for suite in doc.descendants().filter(|n| n.has_tag_name("testsuite")) {
        assert!(suite.attribute("timestamp").is_some(), "{xml}");
    }
    // Without measured times, none is made up.
    let xml = render(&everything(), Format::Junit, Style::PLAIN);
    assert!(!xml.contains(" time="), "{xml}");
}

#[test]
fn github_annotates_the_ten_it_shows_and_says_how_many_more() {
    let mut checks = Vec::new();
    for i in 0..13 {
        let mut c = failing_checks()[0].clone();
        c.read_path = format!("path-{i:02}");
        checks.push(c);
    }
    let r = report(checks);
    let text = render(&r, Format::Github, Style::PLAIN);
    assert_eq!(text.matches("::error ").count(), 10, "{text}");
    assert!(
        text.contains("path-09 [") && !text.contains("path-10 ["),
        "{text}"
    );
    assert!(
        text.contains("::notice title=plancheck%3A 3 more errors::GitHub shows 10 error annotations a step: 3 more are not annotated"),
        "{text}"
    );
    // The last line still counts every one.
    assert!(text.trim_end().ends_with("13 failed, 0 errors"), "{text}");
}

// ----------------------------------------------------------------------------------------------
// A relation never analysed.

/// A check whose pass rests on guesses: `tickets` never analysed.
fn no_statistics() -> CheckResult {
    let mut c = check("queue", "member", "tickets_open_idx", Verdict::NoStatistics);
    c.unanalysed = vec!["tickets".into()];
    c.at_guesses = Some(Verdict::Pass);
    c.message = "tickets never analysed: the planner guessed its size, so its choice here says \
                 nothing of the data's. At those guesses: pass: Index Scan using \
                 tickets_open_idx on tickets"
        .into();
    c
}

#[test]
fn no_statistics_is_neither_a_pass_nor_a_failure_in_every_format() {
    let mut r = report(vec![
        pass("thread-page-first", "member", "posts_thread_visible_idx"),
        no_statistics(),
    ]);
    // Alone it exits 5; a failure beside it makes the run fail.
    assert_eq!(plancheck::status(&r), plancheck::exit_codes::NO_STATISTICS);
    assert_eq!(plancheck::exit_codes::NO_STATISTICS, 5);
    let s = r.summary();
    assert_eq!((s.passed, s.failed, s.no_statistics), (1, 0, 1));

    let text = table(&r);
    assert!(
        text.ends_with(
            "\n2 checks on PostgreSQL 15.8: 1 passed, 0 failed, 0 errors, 1 without statistics\n"
        ),
        "{text}"
    );
    assert!(text.contains("fix: run ANALYZE tickets"), "{text}");

    let json = json_of(&r);
    assert_eq!(json["summary"]["no_statistics"], 1);
    assert_eq!(json["checks"][1]["verdict"], "no-statistics");
    assert_eq!(json["checks"][1]["at_guesses"], "pass");
    assert_eq!(json["checks"][1]["unanalysed"], json!(["tickets"]));
    assert_eq!(json["checks"][0]["unanalysed"], json!([]));

    let xml = render(&r, Format::Junit, Style::PLAIN);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("queue [member]"))
        .unwrap_or_else(|| panic!("no queue/member test case in {xml}"));
    assert!(case.children().any(|n| n.has_tag_name("skipped")), "{xml}");
    assert!(!case.children().any(|n| n.has_tag_name("failure")), "{xml}");

    let github = render(&r, Format::Github, Style::PLAIN);
    assert!(github.contains("::warning "), "{github}");
    assert!(!github.contains("::error "), "{github}");

    r.checks.push(failing_checks().remove(0));
    assert_eq!(plancheck::status(&r), 1);
}

// ----------------------------------------------------------------------------------------------
// 80 columns.

/// Every failing verdict with a note each, and the lint findings: every section under the table.
fn failing_with_every_section() -> Report {
    let mut checks = failing_checks();
    for c in &mut checks {
        c.notes = vec![format!(
            "{} has never been analysed: the planner guesses its size from the pages on disk",
            c.required_index
        )];
    }
    // The error located in a line of SQL wider than the terminal, as the server's error and
    // `error::located` give it.
    let error = checks.last_mut().unwrap();
    assert_eq!(error.verdict, Verdict::Error);
    let line = format!(
        "SELECT p.id FROM posts p WHERE {} AND p.thred_id = $1",
        (0..10)
            .map(|i| format!("p.c{i} = {i}"))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let column = line.find("p.thred_id").unwrap() + 1;
    error.message = format!(
        "plans/thread-page-deep.sql:3:{column}: column p.thred_id does not exist\n  |\n3 | \
         {line}\n  | {}^",
        " ".repeat(column - 1)
    );
    let mut r = report(checks);
    r.lint = findings();
    r.server_version = "15.18 (Debian 15.18-0+deb12u1)".into();
    r
}

/// `text` as a terminal shows it: ANSI colour sequences taken out.
fn shown(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn at_80_columns_no_line_of_a_failing_report_is_wider_and_no_word_is_split() {
    // Regression: `why:` and `fix:` lines went on past the width and the terminal cut names.
    let r = failing_with_every_section();
    assert_eq!(r.checks.len(), 9);
    for color in [false, true] {
        let text = shown(&render(&r, Format::Table, Style { width: 80, color }));
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line:?}\n{text}",
                line.chars().count()
            );
        }
        let words: std::collections::HashSet<&str> = text.split_whitespace().collect();
        let said = unwrapped(&text);
        let mut messages =
            vec!["15.18 (Debian 15.18-0+deb12u1): 0 passed, 8 failed, 1 error".to_string()];
        for c in &r.checks {
            let brief = plancheck::report::brief::of(c, r.require);
            // An error's source line is cut to the width: its first line is said whole, its
            // snippet below.
            messages.push(brief.why.lines().next().unwrap().to_string());
            messages.extend(brief.fix);
            messages.extend(c.notes.iter().cloned());
            messages.extend(c.instead.iter().cloned());
        }
        messages.extend(r.lint.iter().map(|f| f.problem.clone()));
        for m in &messages {
            for word in m.split_whitespace() {
                assert!(words.contains(word), "{word:?} split:\n{text}");
            }
            assert!(said.contains(&unwrapped(m)), "no {m:?} in\n{text}");
        }
        // The error's source line, wider than 80, is a window around the caret, which stays
        // under the column it names.
        let lines: Vec<&str> = text.lines().collect();
        let caret = lines
            .iter()
            .position(|l| l.trim_start().starts_with("| ") && l.ends_with('^'))
            .unwrap_or_else(|| panic!("no caret:\n{text}"));
        assert!(lines[caret - 1].starts_with("    3 | …"), "{text}");
        let at = lines[caret].chars().count() - 1;
        assert_eq!(
            lines[caret - 1]
                .chars()
                .skip(at)
                .take(10)
                .collect::<String>(),
            "p.thred_id",
            "{text}"
        );
        // The sections did wrap: the first check's fix is longer than one line.
        assert!(text.contains("\n    fix: "), "{text}");
        assert!(
            text.contains("\n         "),
            "no continuation under fix:\n{text}"
        );
    }
}
