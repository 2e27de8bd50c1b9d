//! What `capture` prints when it is done: what it read, found, wrote and skipped, and why.

use std::collections::BTreeMap;

use crate::capture::files::{Found, Written};
use crate::capture::propose::Proposal;

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// What a capture read, found and wrote, for its summary.
pub struct Summary<'a> {
    /// How many logs were read.
    pub logs: usize,
    /// Statements read from them.
    pub statements: usize,
    /// Records that could not be read, skipped.
    pub unreadable: usize,
    /// Statements that are no read path, by why.
    pub skipped: &'a BTreeMap<String, usize>,
    pub found: &'a [Found],
    pub proposals: &'a BTreeMap<String, Proposal>,
    pub written: &'a Written,
    /// The scope the log was taken under.
    pub scope: &'a str,
    pub dry_run: bool,
}

/// The summary: statements read, read paths found, written, covered, skipped and why.
pub fn summary(s: &Summary<'_>) -> String {
    let Summary {
        logs,
        statements,
        unreadable,
        skipped,
        found,
        proposals,
        written,
        scope,
        dry_run,
    } = *s;
    let mut out = String::new();
    let not_read: usize = skipped.values().sum();
    out.push_str(&format!(
        "read {statements} statement{} from {logs} log{}{}\n",
        plural(statements),
        plural(logs),
        if unreadable > 0 {
            format!(
                " ({unreadable} unreadable record{} skipped)",
                plural(unreadable)
            )
        } else {
            String::new()
        }
    ));
    if not_read > 0 {
        let why: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.push_str(&format!(
            "  not read paths: {not_read} ({})\n",
            why.join(", ")
        ));
    }
    let new = written.files.len() / 2;
    let covered = found.iter().filter(|f| f.covered.is_some()).count();
    let verb = if dry_run { "to write" } else { "written" };
    out.push_str(&format!(
        "{} read path{} found: {new} {verb}, {covered} already covered{}\n",
        found.len(),
        plural(found.len()),
        if written.scopes_added.is_empty() {
            String::new()
        } else {
            format!(" ({} given scope {})", written.scopes_added.len(), scope)
        }
    ));
    for f in found {
        let line = match (proposals.get(&f.name), &f.covered) {
            (Some(Proposal::Require { index, .. }), None) => {
                format!("  {verb:<8} {} (index {index})", f.name)
            }
            (Some(Proposal::Require { index, .. }), Some(covered)) => match &covered.merge {
                Some(m) => format!(
                    "  scope    {} [{scope}] (index {index}): one condition apart from its plan, \
                     now {{{{{}}}}}: {} in the scopes it had, {} in {scope}",
                    f.name, m.fragment, m.existing, m.new
                ),
                None => format!("  scope    {} [{scope}] (index {index})", f.name),
            },
            (_, Some(_)) => format!("  covered  {}", f.name),
            (Some(Proposal::Skip(skip)), None) => {
                format!("  skipped  {}: {}", f.name, skip.detail())
            }
            (None, None) => format!(
                "  skipped  {}: no logged execution with every parameter value whole and not NULL \
                 ({} seen)",
                f.name, f.group.count
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}
