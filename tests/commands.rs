//! The commands around the checks: `init` writes a project that runs, and never overwrites;
//! `completions` prints a script for each shell, which completes the project's names.

mod common;

use std::fs;

use common::*;

#[test]
fn init_writes_a_project_that_passes_and_never_overwrites_one() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("new");
    let out = plancheck(&["init", project.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for file in [
        "plancheck.toml",
        "plans/example.sql",
        "expectations/example.toml",
    ] {
        assert!(project.join(file).is_file(), "{file} not written");
    }
    let db = fresh_board("commands_init");
    let (status, report) = check_json(&db, &project, &[]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(verdicts(&report).len(), 2, "{report:#}");
    // A second init leaves what is there alone.
    fs::write(project.join("plans/example.sql"), "SELECT 2").unwrap();
    let out = plancheck(&["init", project.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(
        fs::read_to_string(project.join("plans/example.sql")).unwrap(),
        "SELECT 2"
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    // Each script asks plancheck at each completion (`COMPLETE=SHELL plancheck -- …`).
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = plancheck(&["completions", shell]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(stdout.contains("PLANCHECK_COMPLETE"), "{shell}: {stdout}");
        assert!(stdout.contains("plancheck"), "{shell}: {stdout}");
    }
    let out = plancheck(&["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// What bash offers for the words typed so far (the last one being completed), with the script
/// `plancheck completions bash` prints sourced, in `dir`.
fn bash_completes(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_plancheck"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(plancheck completions bash) || exit 9\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_TYPE=9\n\
         _clap_complete_plancheck plancheck {current} {previous}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = quoted.join(" "),
        cword = words.len() - 1,
        current = quoted[words.len() - 1],
        previous = quoted[words.len() - 2],
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("PATH", path)
        // Another tool's variable of that name is not plancheck's.
        .env("COMPLETE", "1")
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_read_path_and_scope_names_from_the_project_in_the_current_folder() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let offered = bash_completes(root, &["plancheck", "check", "--only", "thread-"]);
    assert_eq!(offered, ["thread-page-deep", "thread-page-first"]);
    let offered = bash_completes(root, &["plancheck", "list", "--scope", ""]);
    assert_eq!(offered, ["member", "moderator"]);
    let offered = bash_completes(root, &["plancheck", "ch"]);
    assert_eq!(offered, ["check"]);
    // A project of its own: its names, not the reference project's.
    let dir = read_paths(&[(
        "orders-recent",
        "SELECT 1",
        "[scopes.clerk]\nindex = \"orders_idx\"\n",
    )]);
    let offered = bash_completes(dir.path(), &["plancheck", "check", "--only", ""]);
    assert_eq!(offered, ["orders-recent"]);
    let offered = bash_completes(dir.path(), &["plancheck", "check", "--scope", ""]);
    assert_eq!(offered, ["clerk"]);
    // No project here: nothing offered, and no error.
    let empty = tempfile::tempdir().unwrap();
    assert!(bash_completes(empty.path(), &["plancheck", "check", "--only", ""]).is_empty());
}

#[test]
fn the_progress_line_shows_the_final_verdict_budgets_included() {
    // Regression: a check over its budget printed `pass` on the progress line, and the report
    // then said `over-budget`. `deep` compares with `first`, which runs after it: its line waits.
    let db = fresh_board("commands_progress_budget");
    let plan = "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
                ORDER BY p.created_at, p.id LIMIT 20";
    let index = "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n";
    let deep = format!("relative = {{ to = \"first\", max_ratio = 0.01 }}\n{index}");
    let dir = read_paths(&[("deep", plan, &deep), ("first", plan, index)]);
    let out = plancheck(&[
        "check",
        "--jobs",
        "1",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr.contains("first [member]: pass"), "{stderr}");
    assert!(stderr.contains("deep [member]: over-budget"), "{stderr}");
    assert!(!stderr.contains("deep [member]: pass"), "{stderr}");
    // Both lines, each once.
    assert_eq!(stderr.matches("[member]: ").count(), 2, "{stderr}");
}

#[test]
fn progress_is_a_line_per_check_off_a_terminal_and_nothing_with_quiet() {
    let db = fresh_board("commands_progress");
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    plancheck(&["init", project.to_str().unwrap()])
        .output()
        .unwrap();
    let run = |extra: &[&str]| {
        // One at a time, so that the lines come in the project's order.
        let mut args = vec![
            "check",
            "--jobs",
            "1",
            "--database-url",
            &db,
            "--project",
            project.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = plancheck(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = run(&[]);
    assert!(stderr.contains("[1/2] example [member]: pass"), "{stderr}");
    assert!(
        stderr.contains("[2/2] example [moderator]: pass"),
        "{stderr}"
    );
    // No terminal: no live line rewritten in place.
    assert!(!stderr.contains('\r'), "{stderr:?}");
    let quiet = run(&["-q"]);
    assert!(!quiet.contains("[1/2]"), "{quiet}");
}

#[test]
fn list_names_every_check_a_run_would_make_with_no_database() {
    let root = env!("CARGO_MANIFEST_DIR");
    let list = |args: &[&str]| {
        let mut all = vec!["list", "--project", root];
        all.extend_from_slice(args);
        let out = plancheck(&all).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Every expectation's scopes, counted from the files themselves.
    let mut expected = 0;
    for entry in fs::read_dir(format!("{root}/expectations")).unwrap() {
        let text = fs::read_to_string(entry.unwrap().path()).unwrap();
        let table: toml::Table = text.parse().unwrap();
        expected += table["scopes"].as_table().unwrap().len();
    }
    let (status, stdout, stderr) = list(&["--format", "json"]);
    assert_eq!(status, Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(checks.len(), expected, "{stdout}");
    let moderator = checks
        .iter()
        .find(|c| c["read_path"] == "thread-page-first" && c["scope"] == "moderator")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(moderator["index"], "posts_thread_all_idx");
    assert!(
        moderator["plan"]
            .as_str()
            .unwrap()
            .ends_with("plans/thread-page-first.sql")
    );
    // The line of the scope's table, as the file has it.
    let file = fs::read_to_string(format!("{root}/expectations/thread-page-first.toml")).unwrap();
    let line = file
        .lines()
        .position(|l| l.trim() == "[scopes.moderator]")
        .unwrap()
        + 1;
    assert_eq!(moderator["line"].as_u64(), Some(line as u64), "{moderator}");
    // Filtered as check filters.
    let (_, stdout, _) = list(&["--only", "thread-page-first", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["checks"].as_array().unwrap().len(), 2, "{stdout}");
    // The table ends with the count.
    let read_paths = fs::read_dir(format!("{root}/plans")).unwrap().count();
    let (status, stdout, _) = list(&[]);
    assert_eq!(status, Some(0));
    assert!(
        stdout.trim_end().ends_with(&format!(
            "{expected} checks ({read_paths} read paths × their scopes)"
        )),
        "{stdout}"
    );
    // A misspelt scope is refused as check refuses it.
    let (status, _, stderr) = list(&["--scope", "moderatr"]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("no such scope"), "{stderr}");
}

#[test]
fn files_plancheck_does_not_read_are_said_and_a_misspelt_scope_is_refused() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    fs::create_dir_all(p.join("plans")).unwrap();
    fs::create_dir_all(p.join("expectations")).unwrap();
    for name in ["thread-page-first", "search-rare"] {
        fs::copy(
            root.join(format!("plans/{name}.sql")),
            p.join(format!("plans/{name}.sql")),
        )
        .unwrap();
        fs::copy(
            root.join(format!("expectations/{name}.toml")),
            p.join(format!("expectations/{name}.toml")),
        )
        .unwrap();
    }
    fs::copy(root.join("plancheck.toml"), p.join("plancheck.toml")).unwrap();
    // A plan nobody expects anything of, and an expectation saved under another extension.
    fs::write(p.join("plans/orphan.sql"), "SELECT 1").unwrap();
    fs::rename(
        p.join("expectations/search-rare.toml"),
        p.join("expectations/search-rare.tml"),
    )
    .unwrap();
    fs::write(p.join("expectations/.gitkeep"), "").unwrap();
    let out = plancheck(&["list", "--project", p.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for said in [
        "plans/orphan.sql: not checked: no expectations/orphan.toml",
        // search-rare's plan lost its expectation too.
        "plans/search-rare.sql: not checked",
        "expectations/search-rare.tml: not read: an expectation is expectations/NAME.toml",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    assert!(!stderr.contains(".gitkeep"), "{stderr}");
    // A scope one letter off the project's: refused at its line, with the name meant.
    let text = fs::read_to_string(p.join("expectations/thread-page-first.toml")).unwrap();
    fs::write(
        p.join("expectations/thread-page-first.toml"),
        text.replace("[scopes.moderator]", "[scopes.moderatr]"),
    )
    .unwrap();
    let out = plancheck(&["list", "--project", p.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expectations/thread-page-first.toml:")
            && stderr.contains("did you mean `moderator`?"),
        "{stderr}"
    );
}
