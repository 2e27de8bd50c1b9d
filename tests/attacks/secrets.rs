//! The connection's password and URL, and the environment's credentials, planted where a
//! hostile catalog or a project's file can put them, so that a server's words carry them into
//! plancheck's outputs: the message and DETAIL of an error a function raises, an index
//! predicate's literal (quoted in a verdict's message), a plan's literal (its Filter), a
//! setting's value read back from a table's comment. plancheck connects as a role whose
//! password the server asks for (a `pg_hba.conf` line of the test's own), given in
//! `DATABASE_URL` as a URL, with `PGPASSWORD` and a `GITHUB_TOKEN` in the environment.
//!
//! Every output is read as its reader reads it (JSON parsed, XML parsed, Markdown rendered,
//! workflow commands unescaped), so a secret escaped by a format is found too: the table, the
//! annotations and the job summary of GitHub Actions, every `--report` file, stderr, the
//! `--save-plans` files, and `plancheck judge` of them in every format.

use std::sync::Once;

use super::*;

/// The role plancheck connects as, and its password: a quote, a double quote, `@` and `:`
/// (escaped differently by every format, and percent-encoded in the URL).
const ROLE: &str = "secret_reader";
const PASSWORD: &str = "Pl@n:ck'S3cr\"et-7781";
/// The password as the URL writes it.
const PASSWORD_IN_URL: &str = "Pl%40n%3Ack%27S3cr%22et-7781";
/// The password as the server quotes it in a literal (a plan's Filter, an index predicate).
const PASSWORD_QUOTED: &str = "Pl@n:ck''S3cr\"et-7781";
/// `PGPASSWORD` (unused for the connection: the URL's password wins) and a CI token.
const PGPASSWORD: &str = "Env-PGPASSWORD-only-5530";
const TOKEN: &str = "ghs_0123456789abcdefFakeTokenForTheTest";

/// The socket folder and port of a connection string of the test server.
fn socket_of(conn: &str) -> (String, String) {
    let value = |key: &str| {
        conn.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {conn}"))
            .to_string()
    };
    (value("host"), value("port"))
}

/// The URL plancheck is given for database `db`.
fn url(conn: &str, db: &str) -> String {
    let (host, port) = socket_of(conn);
    format!("postgresql://{ROLE}:{PASSWORD_IN_URL}@/{db}?host={host}&port={port}")
}

/// The role, superuser as CI's often is, and a `pg_hba.conf` line that makes the server ask it
/// for its password over the socket (every other role stays trusted), once per test binary.
fn role_with_a_password(conn: &str) {
    static DONE: Once = Once::new();
    DONE.call_once(|| {
        let password = PASSWORD.replace('\'', "''");
        sql(
            conn,
            &format!("CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{password}'"),
        );
        let hba = query_text(conn, "SHOW hba_file");
        let text = fs::read_to_string(&hba).unwrap();
        fs::write(&hba, format!("local all {ROLE} scram-sha-256\n{text}")).unwrap();
        sql(conn, "SELECT pg_reload_conf()");
        // The reload is the postmaster's, a moment later: wait until the password is asked.
        let (host, port) = socket_of(conn);
        let without = format!("host={host} port={port} user={ROLE} dbname=postgres");
        assert!(
            wait_until(within(Duration::from_secs(10)), || try_sql(
                &without, "SELECT 1"
            )
            .is_err()),
            "the server still lets {ROLE} in without a password"
        );
    });
}

/// Where each secret is planted, on the database and in the project.
fn plant(db: &str, url: &str) -> tempfile::TempDir {
    let q = |s: &str| format!("'{}'", s.replace('\'', "''"));
    sql(
        db,
        &format!(
            "CREATE FUNCTION leak(id bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $f$ \
             BEGIN RAISE EXCEPTION USING MESSAGE = 'leaked: ' || {pw} || ' ' || {env} || ' ' \
             || {token}, DETAIL = 'url: ' || {url}, HINT = 'again: ' || {pw}; END $f$; \
             CREATE INDEX posts_leak_idx ON posts (thread_id, created_at, id) \
             WHERE body <> {pw}; \
             COMMENT ON TABLE posts IS {url};",
            pw = q(PASSWORD),
            env = q(PGPASSWORD),
            token = q(TOKEN),
            url = q(url),
        ),
    );
    let page = |extra: &str| {
        format!(
            "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility {extra} \
             ORDER BY p.created_at, p.id LIMIT 20"
        )
    };
    let raised = page("= 'visible' AND p.id <> leak(p.id)");
    let literal = page(&format!(
        "<> 'deleted' AND p.body NOT LIKE {}",
        q(&format!("%{PASSWORD}%"))
    ));
    let predicate = page("= 'visible'");
    let setting = page("= 'visible'");
    let required = expectation(true, "");
    let leak_idx = "params = [1]\n[scopes.member]\nindex = \"posts_leak_idx\"\n".to_string();
    let from_comment = expectation(
        true,
        &setup_line(&[
            "SELECT set_config('app.note', obj_description('posts'::regclass, 'pg_class'), true)",
        ]),
    );
    read_paths(&[
        ("raised", &raised, &required),
        ("literal", &literal, &required),
        ("predicate", &predicate, &leak_idx),
        ("setting", &setting, &from_comment),
    ])
}

/// `(what, text)` of every string a JSON document holds, keys and values.
fn json_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                json_strings(v, out);
            }
        }
        _ => {}
    }
}

/// The text of an output as its reader sees it (`kind`: the format it is in): JSON's strings,
/// XML's text and attributes, Markdown rendered, workflow commands unescaped; the text itself
/// besides.
fn as_read(kind: &str, name: &str, text: &str) -> String {
    let mut seen = vec![text.to_string()];
    match kind {
        "json" => {
            let json: serde_json::Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{name} is no JSON: {e}\n{text}"));
            json_strings(&json, &mut seen);
        }
        "junit" => {
            let doc = roxmltree::Document::parse(text)
                .unwrap_or_else(|e| panic!("{name} is no XML: {e}\n{text}"));
            for node in doc.descendants() {
                seen.extend(node.text().map(str::to_string));
                seen.extend(node.attributes().map(|a| a.value().to_string()));
            }
        }
        "markdown" => {
            use pulldown_cmark::{Event, Options, Parser};
            let shown: String = Parser::new_ext(text, Options::ENABLE_TABLES)
                .map(|e| match e {
                    Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                        t.into_string()
                    }
                    _ => " ".into(),
                })
                .collect();
            seen.push(shown.replace('\u{2060}', ""));
        }
        _ => {
            // The table, stderr, and GitHub's workflow commands (after the table too).
            seen.push(
                text.replace("%0A", "\n")
                    .replace("%0D", "\r")
                    .replace("%3A", ":")
                    .replace("%2C", ",")
                    .replace("%25", "%"),
            );
        }
    }
    seen.join("\n")
}

/// Every secret, with what it is.
const SECRETS: &[(&str, &str)] = &[
    ("the password", PASSWORD),
    ("the password as the URL writes it", PASSWORD_IN_URL),
    ("the password as a literal quotes it", PASSWORD_QUOTED),
    ("PGPASSWORD", PGPASSWORD),
    ("GITHUB_TOKEN", TOKEN),
];

/// Where each secret is found in `text` (in format `kind`), read as its reader reads it.
fn leaks(kind: &str, name: &str, text: &str, url: &str) -> Vec<String> {
    let read = as_read(kind, name, text);
    let mut out: Vec<String> = SECRETS
        .iter()
        .filter(|(_, s)| read.contains(s))
        .map(|(what, _)| format!("{what} in {name}"))
        .collect();
    if read.contains(url) {
        out.push(format!("the URL in {name}"));
    }
    out
}

/// `plancheck ARGS` with the secrets in its environment, GitHub Actions' variables set.
fn run_with_secrets(args: &[&str], url: &str, summary: &Path) -> Run {
    let mut cmd = plancheck(args);
    cmd.env("DATABASE_URL", url)
        .env("PGPASSWORD", PGPASSWORD)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary);
    run_command(&mut cmd)
}

// The server's error text was printed verbatim: a password read from plancheck's environment
// into a table and raised as an error came out in the JSON, the annotations, the job summary
// and the JUnit report. Now no secret comes out of any output, whatever quotes it.
#[test]
fn secrets_quoted_by_the_server_are_in_no_output() {
    let admin = fresh_board("attack_secrets");
    role_with_a_password(&admin);
    let url = url(&admin, "attack_secrets");
    let dir = plant(&admin, &url);
    let out = tempfile::tempdir().unwrap();
    let reports = out.path().join("reports");
    let saved = out.path().join("saved");
    let summary = out.path().join("summary.md");
    let mut args: Vec<String> = [
        "check",
        "--project",
        dir.path().to_str().unwrap(),
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--explain",
        "--save-plans",
        saved.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    for format in ["table", "json", "junit", "markdown", "github"] {
        args.push("--report".into());
        args.push(format!(
            "{format}={}",
            reports.join(format!("r.{format}")).display()
        ));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_with_secrets(&args, &url, &summary);
    assert_eq!(run.status, Some(1), "{}", run.shown());

    // The secrets reached the report: each check's message or setting quotes one (hidden, it
    // says [redacted] there).
    let json = fs::read_to_string(reports.join("r.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    for name in ["raised", "literal", "predicate", "setting"] {
        let check = check_of(&report, name, "member").to_string();
        let quoted = check.contains("[redacted]") || !leaks("table", name, &check, &url).is_empty();
        assert!(
            quoted,
            "{name}: no secret was quoted, the attack did not reach the report\n{check}"
        );
    }

    let mut found = Vec::new();
    found.extend(leaks(
        "table",
        "stdout (the table, the annotations)",
        &run.stdout,
        &url,
    ));
    found.extend(leaks("table", "stderr", &run.stderr, &url));
    let markdown = fs::read_to_string(&summary).unwrap();
    found.extend(leaks("markdown", "the job summary", &markdown, &url));
    for file in files_under(&reports).into_iter().chain(files_under(&saved)) {
        let text = fs::read_to_string(&file).unwrap();
        let kind = file.extension().unwrap().to_str().unwrap();
        found.extend(leaks(kind, &file.display().to_string(), &text, &url));
    }

    // The saved run judged again, in every format, with the secrets still in the environment.
    let judged = tempfile::tempdir().unwrap();
    for format in ["table", "json", "junit", "markdown", "github"] {
        let run = run_with_secrets(
            &[
                "judge",
                saved.to_str().unwrap(),
                "--explain",
                "--format",
                format,
            ],
            &url,
            &judged.path().join("summary.md"),
        );
        assert_eq!(run.status, Some(1), "{}", run.shown());
        let name = format!("judge --format {format}");
        found.extend(leaks(format, &name, &run.stdout, &url));
        found.extend(leaks(
            "table",
            &format!("stderr of {name}"),
            &run.stderr,
            &url,
        ));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
