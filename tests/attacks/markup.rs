//! Markup in text plancheck did not write: a Markdown link, an image, HTML and a heading in a
//! plan's literal and in a server's error, quoted back into the Markdown of `--format markdown`
//! and of the job summary (`$GITHUB_STEP_SUMMARY`), which GitHub renders on the run's page. A
//! real CommonMark reader (pulldown-cmark) reads what plancheck wrote: nothing of the foreign
//! text may become a link, an image, HTML or a heading, and all of it must still be shown.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag};

use super::*;

/// What the attacker writes: a phishing link, an image that loads from their server, HTML, a
/// heading on a line of its own, and an autolink.
const PAYLOAD: &str = "[Re-run the job](https://evil.example/login) \
    ![status](https://evil.example/pixel.png) <img src=x onerror=alert(1)>\n\
    # Security notice\n<https://evil.example/auto>";

/// The payload as an SQL literal (`E'…'`, the newlines as `\n`).
fn literal() -> String {
    format!("E'{}'", PAYLOAD.replace('\'', "''").replace('\n', "\\n"))
}

/// A function the read path calls, whose error's message and DETAIL carry the payload.
fn raising_function() -> String {
    format!(
        "CREATE FUNCTION markup_raise(id bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $f$ \
         BEGIN RAISE EXCEPTION USING MESSAGE = {lit}, DETAIL = {lit}; END $f$",
        lit = literal()
    )
}

/// Three read paths, each bringing the payload to the report another way: a cast of the
/// literal that the server refuses quoting it; the literal in a Filter that the not-usable
/// message quotes; and a function raising it.
fn hostile_project() -> tempfile::TempDir {
    let cast = format!(
        "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' \
         AND p.id = {}::bigint ORDER BY p.created_at, p.id LIMIT 20",
        literal()
    );
    let filter = format!(
        "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility <> 'deleted' \
         AND p.body <> {} ORDER BY p.created_at, p.id LIMIT 20",
        literal()
    );
    let raised = "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' \
         AND p.id <> markup_raise(p.id) ORDER BY p.created_at, p.id LIMIT 20";
    let exp = expectation(true, "");
    read_paths(&[
        ("cast", &cast, &exp),
        ("filter", &filter, &exp),
        ("raised", raised, &exp),
    ])
}

/// What a CommonMark reader with GitHub's extensions makes of `markdown`: the events that are
/// markup, and the text shown.
fn read_markdown(markdown: &str) -> (Vec<String>, String) {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM;
    let mut markup = Vec::new();
    let mut shown = String::new();
    let mut in_heading = None;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => in_heading = Some((level, String::new())),
            Event::End(pulldown_cmark::TagEnd::Heading(_)) => {
                if let Some((level, text)) = in_heading.take() {
                    markup.push(format!("heading {level:?}: {text}"));
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => markup.push(format!("link {dest_url}")),
            Event::Start(Tag::Image { dest_url, .. }) => markup.push(format!("image {dest_url}")),
            Event::Html(h) | Event::InlineHtml(h) => markup.push(format!("html {h}")),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = in_heading.as_mut() {
                    text.push_str(&t);
                }
                shown.push_str(&t);
            }
            Event::SoftBreak | Event::HardBreak => shown.push('\n'),
            _ => {}
        }
    }
    (markup, shown)
}

/// The markup of `markdown` is plancheck's own (its one heading), and every piece of the
/// payload is shown as text.
fn assert_inert(what: &str, markdown: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let (markup, shown) = read_markdown(markdown);
    let own = format!("heading {:?}: plancheck", HeadingLevel::H2);
    let foreign: Vec<&String> = markup.iter().filter(|m| **m != own).collect();
    if !foreign.is_empty() {
        failures.push(format!(
            "{what}: markup from foreign text: {foreign:?}\n{markdown}"
        ));
    }
    // The payload reached the report (else there is nothing to judge), shown as written.
    for piece in [
        "[Re-run the job](https://evil.example/login)",
        "![status](https://evil.example/pixel.png)",
        "<img src=x onerror=alert(1)>",
        "# Security notice",
    ] {
        let count = shown.matches(piece).count();
        if count < 3 {
            failures.push(format!(
                "{what}: {piece:?} shown {count} times, not in each of the three checks' \
                 messages\n{markdown}"
            ));
        }
    }
    failures
}

// A link in a plan's literal, quoted back by the server in its error, stayed a live link in the
// Markdown report and in the job summary: a phishing link on the run's page. Escaped now.
#[test]
fn markup_in_a_literal_or_an_error_is_no_markup_in_the_markdown_or_the_job_summary() {
    let db = fresh_board("attack_markup");
    sql(&db, &raising_function());
    let dir = hostile_project();
    let project = dir.path().to_str().unwrap();
    let mut failures = Vec::new();

    let run = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        project,
        "--format",
        "markdown",
        "--warmup",
        "0",
        "--iterations",
        "1",
    ]);
    assert_eq!(run.status, Some(1), "{}", run.shown());
    failures.extend(assert_inert("--format markdown", &run.stdout));

    let out = tempfile::tempdir().unwrap();
    let summary = out.path().join("summary.md");
    let junit = out.path().join("report.xml");
    let mut cmd = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        project,
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--report",
        &format!("junit={}", junit.display()),
    ]);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary);
    let run = run_command(&mut cmd);
    assert_eq!(run.status, Some(1), "{}", run.shown());
    failures.extend(assert_inert(
        "the job summary",
        &fs::read_to_string(&summary).unwrap(),
    ));
    // The annotations after the table: one workflow command a failing check, each one line
    // (the payload's line breaks escaped, so no line of it is read as a command of its own).
    let commands: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::")).collect();
    let errors = commands
        .iter()
        .filter(|l| l.starts_with("::error "))
        .count();
    if errors != 3 {
        failures.push(format!(
            "{errors} ::error annotations, not 3\n{}",
            run.shown()
        ));
    }
    // The JUnit report is XML a reader accepts, whatever the messages hold.
    let xml = fs::read_to_string(&junit).unwrap();
    if let Err(e) = roxmltree::Document::parse(&xml) {
        failures.push(format!("the JUnit report is no XML: {e}\n{xml}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
