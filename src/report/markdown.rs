//! Markdown for a CI job's summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: the
//! summary line, the evidence table `| Read path [scope] | Required index | Verdict (used
//! instead) | Warm p50 |` (a row per read path and scope, in the table's reading order), the time
//! budgets in a performance page's columns `| Read path [scope] | Time budget | Warm p50 |
//! Fastest | Slowest | p95 | p99 | Runs | Budget used | p50 against the budget | Round trip p50
//! |` with a line saying what they measure, and the buffer budgets `| Read path [scope] |
//! Buffer budget | Measured | Budget used |` when budgets are set, and why each check that did not
//! pass failed.

use super::{BudgetPart, Report, budget_parts, buffers, ms, ms_value};
use crate::verdict::{CheckResult, Spread, WarmStanding};

pub(super) fn markdown(report: &Report) -> String {
    let mut out = format!("## plancheck\n\n{}\n", summary_line(report));
    out.push('\n');
    out.push_str(&evidence(report));
    let times = time_budgets(report);
    if !times.is_empty() {
        out.push('\n');
        out.push_str(&times);
    }
    let budgets: Vec<String> = report.checks.iter().flat_map(buffer_rows).collect();
    if !budgets.is_empty() {
        out.push_str(
            "\n| Read path [scope] | Buffer budget | Measured | Budget used |\n|---|---|---|---|\n",
        );
        out.push_str(&budgets.concat());
    }
    out.push_str(&why_list(report));
    if let Some(hold) = &report.migration_hold {
        out.push_str(&format!(
            "\n**Migration**: {}\n",
            text(&super::migration::hold(hold))
        ));
    }
    let applied = super::applied_lines(report);
    if !applied.is_empty() {
        out.push_str("\n**Settings applied**\n\n");
        for line in applied {
            out.push_str(&format!("- {}\n", text(&line)));
        }
    }
    let past: Vec<String> = report
        .checks
        .iter()
        .filter_map(|c| {
            Some(format!(
                "- {}: {}\n",
                text(&check_name(c)),
                text(&super::past_policies(c)?)
            ))
        })
        .collect();
    if !past.is_empty() {
        out.push_str("\n**Row-level security**\n\n");
        out.push_str(&past.concat());
    }
    if !report.lint.is_empty() {
        out.push_str("\n**Index problems**\n\n");
        for f in &report.lint {
            let read_paths = f.read_paths().join(", ");
            out.push_str(&format!("- {}: {}\n", text(&read_paths), text(&f.problem)));
        }
    }
    if !report.role_warnings.is_empty() {
        out.push_str(
            "\n**The role's rights**: the project's SQL ran with rights that reach outside the \
             rolled-back transaction; connect as a least-privilege role\n\n",
        );
        for r in &report.role_warnings {
            out.push_str(&format!("- {}: {}\n", text(&r.right), text(&r.what)));
        }
    }
    out
}

/// The summary line, the server's version in it escaped.
pub(super) fn summary_line(report: &Report) -> String {
    super::summary_line_quoting(report, &text)
}

/// Why each check that did not pass failed, under a `**Why**` heading; empty when all passed.
pub(super) fn why_list(report: &Report) -> String {
    let mut out = String::new();
    let why: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.verdict.is_pass())
        .map(|c| {
            // The fix the table gives, unless the message ends with its own (a seq scan's).
            let fix = super::brief::of(c, report.require)
                .fix
                .filter(|_| !c.message.contains("Fix: "))
                .map(|fix| format!("\n  - fix: {}", text(&fix)))
                .unwrap_or_default();
            format!(
                "- {} **{}**: {}{fix}\n",
                check_name(c),
                c.verdict,
                text(&c.message)
            )
        })
        .collect();
    if !why.is_empty() {
        out.push_str("\n**Why**\n\n");
        out.push_str(&why.concat());
    }
    out
}

/// The `Verdict (used instead)` cell, as Markdown: `pass`; else the verdict, `(warning)` when it
/// does not fail the run, and what was used instead; with a migration, the verdict before it
/// first.
fn verdict_cell(report: &Report, c: &CheckResult) -> String {
    let mut now = if c.verdict.is_pass() && c.required_index.is_empty() {
        "pass (nothing read whole beyond allow_seq_scan)".to_string()
    } else if c.verdict.is_pass() {
        "pass".to_string()
    } else {
        format!("**{}**", c.verdict)
    };
    if c.is_warning(report.require) {
        now.push_str(" (warning)");
    }
    if !c.instead.is_empty() {
        now.push_str(&format!(": {}", cell(&c.instead.join("; "))));
    }
    match (report.before.is_some(), report.before_of(c)) {
        (true, Some(b)) => format!("{} → {now}", b.verdict),
        (true, None) => format!("(not run) → {now}"),
        (false, _) => now,
    }
}

/// The evidence table: a row per check, the index it requires, its verdict and what the plan
/// used instead, the warm p50.
pub(super) fn evidence(report: &Report) -> String {
    let mut out = String::from(
        "| Read path [scope] | Required index | Verdict (used instead) | Warm p50 |\n\
         |---|---|---|---|\n",
    );
    for c in &report.checks {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            check_name(c),
            if c.required_index.is_empty() {
                "none".to_string()
            } else {
                code(&c.required_index)
            },
            verdict_cell(report, c),
            ms(c.warm_ms)
        ));
    }
    out
}

/// The time budgets in a performance page's columns: a row per check with a `warm_ms` budget,
/// the p50 of the measured runs' execution time (what the budget is judged on), the fastest run
/// (over only when it is over too), the slowest, the p95 and p99 where the runs are enough for
/// them (`-` otherwise: of fewer than 20 runs a p95 is the slowest run), the runs, the share of
/// the budget the p50 used, how the p50 stands against the budget (`within`, `within noise` or
/// `OVER`); then the p50 of the plain statement's round trip as the client saw it. Under the
/// table, a line saying what each figure measures. Empty when no check has a time budget.
pub(super) fn time_budgets(report: &Report) -> String {
    let mut rows = String::new();
    for c in &report.checks {
        for part in budget_parts(c) {
            let BudgetPart::WarmMs {
                limit,
                share,
                standing,
            } = part
            else {
                continue;
            };
            let spread = |f: fn(&Spread) -> Option<f64>| {
                c.warm_ms
                    .as_ref()
                    .and_then(f)
                    .map(ms_value)
                    .unwrap_or_else(|| "-".into())
            };
            let round_trip = c
                .client_ms
                .as_ref()
                .map(|s| ms_value(s.p50))
                .unwrap_or_else(|| "-".into());
            rows.push_str(&format!(
                "| {} | {} ms | {} | {} | {} | {} | {} | {} | {:.0}% | {} | {round_trip} |\n",
                check_name(c),
                limit,
                spread(|s| Some(s.p50)),
                spread(|s| Some(s.min)),
                spread(|s| Some(s.max)),
                spread(Spread::p95_of_enough),
                spread(Spread::p99_of_enough),
                c.warm_ms
                    .map(|s| s.runs.to_string())
                    .unwrap_or_else(|| "-".into()),
                100.0 * share,
                match standing {
                    WarmStanding::Over => "**OVER**",
                    WarmStanding::WithinNoise => "within noise",
                    WarmStanding::Under => "within",
                }
            ));
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "| Read path [scope] | Time budget | Warm p50 | Fastest | Slowest | p95 | p99 | Runs | \
         Budget used | p50 against the budget | Round trip p50 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n{rows}\n{}\n",
        time_key()
    )
}

/// What the time budgets' figures measure, as a paragraph under their table.
fn time_key() -> String {
    format!(
        "Warm p50, Fastest, Slowest, p95, p99: the server's execution time (EXPLAIN ANALYZE) of \
         each check's measured runs, after the discarded ones; a p95 only of {} runs or more and \
         a p99 of {} or more (of fewer, the nearest rank is the slowest run). Budget used: the \
         warm p50's share of the budget. A budget is judged on the p50, and is over only when the \
         p50 is over it by more than {} ms and the fastest run is over it too (a busy machine \
         adds time to some runs; `within noise` otherwise). Round trip p50: the plain statement \
         (not EXPLAIN) as the client saw it, as many runs, from the request sent to its last \
         row: the network, the protocol and the rows sent back.",
        Spread::P95_RUNS,
        Spread::P99_RUNS,
        crate::verdict::WARM_NOISE_MS
    )
}

/// A row per buffer budget of the check (absolute, or relative to another read path's).
fn buffer_rows(c: &CheckResult) -> Vec<String> {
    budget_parts(c)
        .into_iter()
        .filter_map(|p| {
            let (budget, measured, share) = match p {
                BudgetPart::WarmMs { .. } => return None,
                BudgetPart::Buffers { limit, share } => (
                    format!("{} buf", crate::verdict::group(limit)),
                    format!("{} buf", buffers(c)),
                    share,
                ),
                BudgetPart::Relative { ratio, max, to } => (
                    format!("{max}× {to}'s buffers"),
                    format!("{ratio:.1}× {to}'s"),
                    ratio / max,
                ),
            };
            Some(format!(
                "| {} | {} | {} | {:.0}% |\n",
                check_name(c),
                cell(&budget),
                measured,
                100.0 * share
            ))
        })
        .collect()
}

/// `read-path [scope]`, as every format names a check, the names (from the project's files)
/// escaped.
fn check_name(c: &CheckResult) -> String {
    format!("{} [{}]", text(&c.read_path), text(&c.scope))
}

/// Text in a table cell: as [`text`] (a `|` is escaped there, as every punctuation character).
pub(super) fn cell(s: &str) -> String {
    text(s)
}

/// Text plancheck did not write (a server's words, a name from a project file), or a line that
/// holds some, as Markdown that shows it and means nothing: one line (a control character, a
/// line break among them, is a space), and every ASCII punctuation character escaped with a
/// backslash, which CommonMark allows before each of them and shows as the character alone. So
/// no link, image, HTML, code span, emphasis, heading, list, quote, table cell, entity, math or
/// GitHub autolink (`https://…`, `www.…`: an escaped `:` or `.` starts none; an e-mail
/// address: see [`WORD_JOINER`]) begins inside it, wherever it stands. An allow-list: letters, digits, spaces and non-ASCII characters pass as
/// they are, and the few marks no reader takes for markup inside a line ([`INERT`], and `_`
/// inside a word) unless they start the text.
pub(super) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_control() {
            out.push(' ');
            continue;
        }
        // An underscore inside a word (`posts_thread_idx`) can neither open nor close
        // emphasis in CommonMark: it stays as written.
        let inside_word = c == '_'
            && i > 0
            && chars[i - 1].is_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_ascii_punctuation() && (i == 0 || !(INERT.contains(c) || inside_word)) {
            out.push('\\');
        }
        out.push(c);
        if c == '@' {
            // GitHub links `name@host.tld` as an e-mail address however its characters are
            // escaped; a word joiner (shown as nothing) after the `@` is no host's start.
            out.push(WORD_JOINER);
        }
    }
    out
}

/// U+2060, a character of zero width that no address or name holds.
const WORD_JOINER: char = '\u{2060}';

/// Punctuation that CommonMark and GitHub's Markdown read as text anywhere but at the start of
/// a line (where `-`, `+` or `=` make a list or a heading): left unescaped, so that a message
/// stays readable in the raw Markdown.
const INERT: &str = "\"',;/?%=-{}";

/// An identifier as code, so that `_` and `*` in it are not emphasis: a code span holds no
/// markup but a `|`, which a table would still read as a cell's end. One with a backtick (which
/// would close the span) is escaped text instead.
fn code(s: &str) -> String {
    if s.contains('`') || s.chars().any(char::is_control) {
        cell(s)
    } else {
        format!("`{}`", s.replace('|', "\\|"))
    }
}

#[cfg(test)]
mod tests {
    use super::text;
    use pulldown_cmark::{Event, Options, Parser, Tag};

    /// Every construct a server's words or a project's names could try, in one line each, and
    /// at the start of a line.
    const HOSTILE: &[&str] = &[
        "[click here](https://evil.example/login)",
        "![logo](https://evil.example/i.png)",
        "<img src=x onerror=alert(1)> <b>bold</b> <!-- c -->",
        "<https://evil.example/auto> https://evil.example/bare www.evil.example",
        "# a heading",
        "line one\n# a heading\n[ref]: https://evil.example\n[ref]",
        "`code` **strong** *em* _em_ ~~gone~~ $x^2$ [^1]",
        "> quoted\n- item\n1. item\n---\n=====",
        "a | b | c",
        "&lt;b&gt; &#60;b&#62; &amp;",
        "\\[escaped\\](https://evil.example)",
        "user@evil.example",
        "- starts like a list",
        "posts_thread_visible_idx and _emphasis_ and __strong__",
    ];

    /// The events a CommonMark reader (with GitHub's tables, strikethrough, footnotes and
    /// maths) makes of `markdown` placed in a list item, as the report places it.
    fn events(markdown: &str) -> Vec<Event<'static>> {
        let options = Options::ENABLE_TABLES
            | Options::ENABLE_STRIKETHROUGH
            | Options::ENABLE_FOOTNOTES
            | Options::ENABLE_MATH
            | Options::ENABLE_GFM;
        Parser::new_ext(&format!("- x: {markdown}\n"), options)
            .map(Event::into_static)
            .collect()
    }

    #[test]
    fn foreign_text_makes_no_markup_and_shows_as_written() {
        for hostile in HOSTILE {
            let escaped = text(hostile);
            let events = events(&escaped);
            let mut shown = String::new();
            for e in &events {
                match e {
                    Event::Start(Tag::List(_) | Tag::Item) | Event::End(_) => {}
                    Event::Text(t) => shown.push_str(t),
                    other => panic!("{hostile:?} made {other:?} of {escaped:?}"),
                }
            }
            let expected = format!(
                "x: {}",
                hostile.replace('\n', " ").replace('@', "@\u{2060}")
            );
            assert_eq!(shown, expected, "{escaped}");
        }
    }

    #[test]
    fn names_stay_readable() {
        assert_eq!(text("posts_thread_visible_idx"), "posts_thread_visible_idx");
        assert_eq!(text("thread-page-first"), "thread-page-first");
        assert_eq!(text("-starts"), "\\-starts");
        assert_eq!(text("it's \"a\", b; c/d = e?"), "it's \"a\", b; c/d = e?");
    }
}
