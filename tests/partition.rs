//! A suite split across CI runners: `--partition K/N` gives each runner a share of the checks,
//! disjoint and covering them all, and `plancheck judge DIR...` joins the runners' saved runs
//! into one report, the same as one run of every check.

mod common;

use std::collections::BTreeSet;

use common::*;

/// `(read_path, scope)` of every check `list --format json` names, with these extra arguments.
fn listed(extra: &[&str]) -> BTreeSet<(String, String)> {
    let root = reference_project();
    let mut args = vec![
        "list",
        "--project",
        root.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.code(), 0, "{}", out.shown());
    out.report()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["read_path"].as_str().unwrap().to_string(),
                c["scope"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn partitions_of_the_reference_project_are_disjoint_and_cover_every_check() {
    let all = listed(&[]);
    assert!(all.len() > 10, "{all:?}");
    for kind in ["slice:", "hash:", ""] {
        for n in [1, 2, 3, 7] {
            let mut seen = BTreeSet::new();
            let mut total = 0;
            for k in 1..=n {
                let part = listed(&["--partition", &format!("{kind}{k}/{n}")]);
                total += part.len();
                seen.extend(part);
            }
            assert_eq!(total, all.len(), "{kind}{n}: a check in two partitions");
            assert_eq!(seen, all, "{kind}{n}: a check in no partition");
        }
    }
    // A bad split is bad input, naming the flag.
    let out = run(&[
        "list",
        "--project",
        reference_project().to_str().unwrap(),
        "--partition",
        "4/3",
    ]);
    assert_eq!(out.code(), 2, "{}", out.shown());
    assert!(out.stderr.contains("--partition"), "{}", out.shown());
}

/// `(testcase name, its outcome)` of a JUnit file: passed, failure, error or skipped.
fn junit_cases(xml: &str) -> BTreeSet<(String, String)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let outcome = n
                .children()
                .find(|c| c.is_element())
                .map(|c| c.tag_name().name().to_string())
                .unwrap_or_else(|| "passed".into());
            (n.attribute("name").unwrap().to_string(), outcome)
        })
        .collect()
}

#[test]
fn runners_shares_joined_by_judge_are_one_run_of_every_check() {
    let db = fresh_board("partition_join");
    let root = reference_project();
    let out = tempfile::tempdir().unwrap();
    let saved = |name: &str, extra: &[&str]| {
        let dir = out.path().join(name);
        let mut args = vec!["--save-plans", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let run = check(&db, &root, &args);
        assert!(matches!(run.code(), 0 | 1), "{name}: {}", run.shown());
        dir
    };
    let whole = saved("whole", &[]);
    let parts: Vec<_> = (1..=3)
        .map(|k| {
            saved(
                &format!("part{k}"),
                &["--partition", &format!("hash:{k}/3")],
            )
        })
        .collect();
    let judge = |dirs: &[&std::path::Path], format: &str| {
        let mut args = vec!["judge"];
        args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
        args.extend(["--format", format]);
        run(&args)
    };
    let one = judge(&[&whole], "junit");
    let joined = judge(&[&parts[0], &parts[1], &parts[2]], "junit");
    assert_eq!(joined.code(), one.code(), "{}", joined.shown());
    let (one_cases, joined_cases) = (junit_cases(&one.stdout), junit_cases(&joined.stdout));
    assert!(one_cases.len() > 10, "{one_cases:?}");
    assert_eq!(joined_cases, one_cases);
    // The JSON summaries agree too.
    let one = judge(&[&whole], "json").report();
    let joined = judge(&[&parts[0], &parts[1], &parts[2]], "json").report();
    assert_eq!(joined["summary"], one["summary"]);

    // A check in two folders is refused, naming both.
    let twice = judge(&[&parts[0], &whole], "json");
    assert_eq!(twice.code(), 2, "{}", twice.shown());
    assert!(
        twice.stderr.contains("must not overlap") && twice.stderr.contains("part1"),
        "{}",
        twice.shown()
    );
}
