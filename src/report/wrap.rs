//! Prose wrapped to the terminal's width at spaces, each continuation indented under its label.
//!
//! What the table prints under it (`why:`, `fix:`, `used instead:`, notes, the summary line) is
//! sentences full of identifiers: an index's name must stay copyable, so a line is only ever
//! broken at a space. A word too long for the room left at its indent is put on a line of its own
//! further left, whole; only a word wider than the whole width is cut (nothing else can keep the
//! line within the width). Widths are counted as the terminal shows them: by
//! `unicode-width`, an ANSI colour sequence counting for nothing.

use unicode_width::UnicodeWidthChar;

/// `text` (its label first, e.g. `fix: add the index`) in lines of at most `width` columns, the
/// first starting at `first` spaces, the others at `rest`. Ends without a newline. What follows
/// a line break in `text` is laid out already (an error's source snippet, whose caret must stay
/// under its column): each of its lines is indented to `rest` as it is, only a source line too
/// wide for the room is cut to a window around the caret ([`snippet`]).
pub(super) fn hanging(text: &str, first: usize, rest: usize, width: usize) -> String {
    match text.split_once('\n') {
        Some((head, tail)) => format!(
            "{}\n{}",
            paragraph(head, first, rest, width),
            snippet(tail, rest, width)
        ),
        None => paragraph(text, first, rest, width),
    }
}

/// The lines of a source snippet (`  |`, `5 | SQL`, `  |     ^`, as `error::located` draws
/// them), each `indent` spaces in. A source line wider than the room left is shown as a window
/// of it around the caret under it, each cut end marked `…` (as `located` marks a line it cut),
/// so the caret stays under its character and no line is wider than `width`. Tabs are shown as
/// four spaces, in the line and under it alike, so the columns can be counted.
fn snippet(block: &str, indent: usize, width: usize) -> String {
    let lines: Vec<&str> = block.split('\n').collect();
    let pad = " ".repeat(indent);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let caret = lines
            .get(i + 1)
            .and_then(|next| source_and_caret(lines[i], next));
        match caret {
            Some((gutter, code, at)) => {
                let room = width.saturating_sub(indent + gutter.len() + 3).max(1);
                let (code, column) = window(&code, at, room);
                let blank = " ".repeat(gutter.len());
                out.push(format!("{pad}{gutter} | {code}"));
                out.push(format!("{pad}{blank} | {}^", " ".repeat(column)));
                i += 2;
            }
            None => {
                out.push(format!("{pad}{}", lines[i]));
                i += 1;
            }
        }
    }
    out.join("\n")
}

/// A source line `N | code` followed by its caret line `  |   ^`: the gutter (`N`), the code
/// with its tabs as four spaces, and the index among its characters of the one the caret is
/// under (the code's length when the caret is past its end).
fn source_and_caret(line: &str, next: &str) -> Option<(String, Vec<char>, usize)> {
    let (gutter, code) = line.split_once(" | ")?;
    let gutter = gutter.trim_start();
    if gutter.is_empty() || !gutter.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (blank, under) = next.split_once(" | ")?;
    let before = under.strip_suffix('^')?;
    if !blank.trim().is_empty() || !before.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    // The caret line holds a space (or the tab) for each character before the caret's.
    let mut expanded = Vec::new();
    let mut at = None;
    for (n, c) in code.chars().enumerate() {
        if n == before.chars().count() {
            at = Some(expanded.len());
        }
        if c == '\t' {
            expanded.extend([' '; 4]);
        } else {
            expanded.push(c);
        }
    }
    let at = at.unwrap_or(expanded.len());
    Some((gutter.to_string(), expanded, at))
}

/// `code` shown in at most `room` columns: whole when it fits, else a window holding the
/// character at `at`, as centred on it as the line allows, each cut end marked `…`. Returns the
/// text and the column the caret goes under.
fn window(code: &[char], at: usize, room: usize) -> (String, usize) {
    let width = |cs: &[char]| cs.iter().map(|c| c.width().unwrap_or(0)).sum::<usize>();
    let n = code.len();
    if width(code) <= room {
        return (code.iter().collect(), width(&code[..at.min(n)]));
    }
    let fits =
        |s: usize, e: usize| width(&code[s..e]) + usize::from(s > 0) + usize::from(e < n) <= room;
    let (mut s, mut e) = (at.min(n), (at + 1).min(n));
    loop {
        let mut wider = false;
        if e < n && fits(s, e + 1) {
            e += 1;
            wider = true;
        }
        if s > 0 && fits(s - 1, e) {
            s -= 1;
            wider = true;
        }
        if !wider {
            break;
        }
    }
    let before = if s > 0 { "…" } else { "" };
    let after = if e < n { "…" } else { "" };
    let shown: String = code[s..e].iter().collect();
    (
        format!("{before}{shown}{after}"),
        usize::from(s > 0) + width(&code[s..at.min(n)]),
    )
}

/// [`hanging`] for a text of one line: as it is when it fits (its runs of spaces kept, as a
/// plan line's indentation), else wrapped at spaces.
fn paragraph(text: &str, first: usize, rest: usize, width: usize) -> String {
    if first + shown_width(text) <= width {
        return format!("{}{text}", " ".repeat(first));
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = " ".repeat(first);
    // Columns taken on the current line, and whether it holds a word yet.
    let mut taken = first;
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w = shown_width(word);
        if !empty && taken + 1 + w <= width {
            line.push(' ');
            line.push_str(word);
            taken += 1 + w;
            continue;
        }
        if empty && taken + w <= width {
            line.push_str(word);
            taken += w;
            empty = false;
            continue;
        }
        if !empty {
            lines.push(std::mem::take(&mut line));
        }
        if rest + w <= width {
            line = format!("{}{word}", " ".repeat(rest));
            taken = rest + w;
        } else if w <= width {
            // Whole on a line of its own, as far left as it must be to fit.
            line = format!("{}{word}", " ".repeat(width - w));
            taken = width;
        } else {
            // Wider than the width itself: the only word ever cut.
            let mut pieces = cut(word, width.max(1));
            line = pieces.pop().unwrap_or_default();
            taken = shown_width(&line);
            lines.extend(pieces);
        }
        empty = false;
    }
    lines.push(line);
    lines.join("\n")
}

/// A label and its text, `label text`, continuation lines under the text when at least
/// [`MIN_ROOM`] columns are left there, else two columns in from the label.
pub(super) fn labelled(label: &str, text: &str, indent: usize, width: usize) -> String {
    let under_text = indent + shown_width(label) + 1;
    let rest = if width.saturating_sub(under_text) >= MIN_ROOM {
        under_text
    } else {
        indent + 2
    };
    hanging(&format!("{label} {text}"), indent, rest, width)
}

/// Narrower than this, continuation lines under a label's text read as a column of fragments.
const MIN_ROOM: usize = 30;

/// Each line of `block` wrapped to `width`, its own leading spaces kept, its continuation lines
/// two columns further in. Ends with a newline when `block` does.
pub(super) fn lines(block: &str, width: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    for l in block.lines() {
        let indent = l.len() - l.trim_start_matches(' ').len();
        out.push(hanging(&l[indent..], indent, indent + 2, width));
    }
    let mut text = out.join("\n");
    if block.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The columns `text` takes on a terminal: its characters' widths, ANSI escape sequences
/// (`ESC [ … letter`) taking none.
pub(super) fn shown_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            skip_escape(&mut chars, &mut String::new());
        } else {
            width += c.width().unwrap_or(0);
        }
    }
    width
}

/// Past the rest of an escape sequence whose ESC was read, copying it to `into`.
fn skip_escape(chars: &mut std::str::Chars<'_>, into: &mut String) {
    into.push('\u{1b}');
    for c in chars.by_ref() {
        into.push(c);
        if c.is_ascii_alphabetic() {
            break;
        }
    }
}

/// `word` in pieces of at most `width` columns, escape sequences kept whole.
fn cut(word: &str, width: usize) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut taken = 0;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        let last = pieces.last_mut().expect("never empty");
        if c == '\u{1b}' {
            skip_escape(&mut chars, last);
            continue;
        }
        let w = c.width().unwrap_or(0);
        if taken + w > width && taken > 0 {
            pieces.push(String::new());
            taken = 0;
        }
        pieces.last_mut().expect("never empty").push(c);
        taken += w;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(text: &str) -> usize {
        text.lines().map(shown_width).max().unwrap_or(0)
    }

    #[test]
    fn a_short_text_is_one_line_at_its_indent() {
        assert_eq!(hanging("fix: add it", 4, 9, 80), "    fix: add it");
    }

    #[test]
    fn continuation_lines_are_indented_under_the_label_and_break_only_at_spaces() {
        let text = "fix: CREATE INDEX posts_thread_visible_idx ON posts (thread_id, created_at) \
                    WHERE visibility = 'visible'";
        let wrapped = labelled("fix:", &text[5..], 4, 40);
        assert_eq!(
            wrapped,
            "    fix: CREATE INDEX\n\
             \x20        posts_thread_visible_idx ON\n\
             \x20        posts (thread_id, created_at)\n\
             \x20        WHERE visibility = 'visible'"
        );
        assert!(widest(&wrapped) <= 40);
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        // With room under the text, continuation lines align with it.
        let wrapped = labelled("fix:", "a b c d e f g h i j k l m n o p q r s t u v", 4, 40);
        assert_eq!(
            wrapped,
            "    fix: a b c d e f g h i j k l m n o p\n         q r s t u v"
        );
    }

    #[test]
    fn a_word_too_long_for_its_indent_moves_left_whole_and_only_a_word_wider_than_the_width_is_cut()
    {
        let name = "x".repeat(36);
        let wrapped = hanging(&format!("aaaaaaaa {name} b"), 0, 10, 40);
        assert_eq!(wrapped, format!("aaaaaaaa\n    {name}\n          b"));
        let long = "y".repeat(45);
        let wrapped = hanging(&format!("a {long}"), 0, 4, 20);
        assert!(widest(&wrapped) <= 20, "{wrapped}");
        assert_eq!(wrapped.lines().skip(1).collect::<String>(), long);
    }

    #[test]
    fn colour_takes_no_columns() {
        let red = "\u{1b}[31mnot-chosen\u{1b}[0m:";
        assert_eq!(shown_width(red), "not-chosen:".len());
        let wrapped = hanging(&format!("page [member] {red} a b"), 2, 4, 31);
        assert_eq!(wrapped, format!("  page [member] {red} a b"));
    }

    #[test]
    fn what_follows_a_line_break_is_kept_as_laid_out_under_the_label() {
        let text = "page [member] error: plans/page.sql:4:10: column p.create_at does not exist\n  \
                    |\n4 | ORDER BY p.create_at, p.id\n  |          ^";
        assert_eq!(
            hanging(text, 2, 4, 60),
            "  page [member] error: plans/page.sql:4:10: column\n    \
             p.create_at does not exist\n      |\n    4 | ORDER BY p.create_at, p.id\n      \
             |          ^"
        );
    }

    /// The character the caret of a snippet's last two lines is under.
    fn under_caret(text: &str) -> char {
        let lines: Vec<&str> = text.lines().collect();
        let caret = lines[lines.len() - 1].chars().count() - 1;
        lines[lines.len() - 2]
            .chars()
            .nth(caret)
            .unwrap_or_else(|| panic!("caret past its line:\n{text}"))
    }

    #[test]
    fn a_source_line_wider_than_the_room_is_a_window_around_the_caret() {
        // Regression: a long SQL line under `why:` went past the terminal's width.
        let sql = format!(
            "SELECT p.id FROM posts p WHERE {} AND p.visibility = $2::visibility",
            (0..12)
                .map(|i| format!("p.c{i} = {i}"))
                .collect::<Vec<_>>()
                .join(" AND ")
        );
        let column = sql.find("::visibility").unwrap() + 1;
        let text = format!(
            "path [member] error: plans/path.sql:12:{column}: type \"visibility\" does not \
             exist\n   |\n12 | {sql}\n   | {}^",
            " ".repeat(column - 1)
        );
        for width in [40, 60, 80, 100] {
            let shown = hanging(&text, 2, 4, width);
            assert!(widest(&shown) <= width, "{width}:\n{shown}");
            assert_eq!(under_caret(&shown), ':', "{width}:\n{shown}");
            let source = shown.lines().nth_back(1).unwrap();
            assert!(source.starts_with("    12 | …"), "{width}:\n{shown}");
            assert!(source.contains("visibility"), "{width}:\n{shown}");
        }
        // A caret near the start: the line's start is shown, its end cut.
        let text = format!("e: x\n  |\n1 | {sql}\n  | ^");
        let shown = hanging(&text, 2, 4, 50);
        assert!(widest(&shown) <= 50, "{shown}");
        assert!(shown.contains("    1 | SELECT p.id"), "{shown}");
        assert!(shown.lines().nth_back(1).unwrap().ends_with('…'), "{shown}");
        assert_eq!(under_caret(&shown), 'S', "{shown}");
        // Past the end of the line, and a tab before the caret.
        let text = "e: x\n  |\n1 | \tselect 1 +\n  | \t          ^";
        let shown = hanging(text, 0, 0, 80);
        assert_eq!(shown, "e: x\n  |\n1 |     select 1 +\n  |               ^");
    }

    #[test]
    fn a_line_that_fits_keeps_its_runs_of_spaces() {
        assert_eq!(hanging("-   Index Scan", 6, 8, 40), "      -   Index Scan");
    }

    #[test]
    fn each_line_of_a_block_keeps_its_indent() {
        assert_eq!(
            lines("a: one two three\n    b four five\n", 12),
            "a: one two\n  three\n    b four\n      five\n"
        );
    }
}
