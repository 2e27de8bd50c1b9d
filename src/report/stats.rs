//! What `plancheck stats export` and `plancheck stats show` say of a statistics file.

use super::wrap;
use crate::stats::File;

/// After an export: what was written, and what of production it reveals.
pub fn exported(file: &File, path: &str) -> String {
    let width = crate::cli::settings::plain_style_of_process().width;
    let shown = if path == "-" { "standard output" } else { path };
    let mut text = format!("wrote {shown}: {}\n{}", contents(file), reveals(file));
    text = wrap::lines(&text, width);
    text.trim_end().to_string()
}

/// `stats show`: the file's server, age, what it holds and what it reveals.
pub fn show(file: &File, path: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    let width = crate::cli::settings::plain_style_of_process().width;
    let age = file
        .age(now)
        .map(|a| format!(" ({})", age(a)))
        .unwrap_or_default();
    let mut text = format!(
        "{path}: statistics of PostgreSQL {} (server_version_num {}), exported {}{age}\n\
         text sorted by {}\n{}\n",
        file.server.version,
        file.server.version_num,
        file.exported_at,
        file.server.collation(),
        contents(file),
    );
    for r in &file.relations {
        let heights: Vec<String> = r
            .indexes
            .iter()
            .filter_map(|i| {
                let b = i.btree.as_ref()?;
                Some(format!(
                    "{} {}{}",
                    i.name,
                    b.height,
                    if b.height_from == "estimate" {
                        " (estimated)"
                    } else {
                        ""
                    }
                ))
            })
            .collect();
        text.push_str(&format!(
            "  {} ({}): {} pages, {} rows, {} columns with statistics, {} indexes{}\n",
            r.qualified(),
            kind(&r.kind),
            r.size.blocks,
            rows(r.size.reltuples),
            r.columns.len(),
            r.indexes.len(),
            if heights.is_empty() {
                String::new()
            } else {
                format!("; B-tree heights: {}", heights.join(", "))
            }
        ));
    }
    text.push_str(&reveals(file));
    text.push('\n');
    if let Some(stale) = stale(file, now) {
        text.push_str(&stale);
        text.push('\n');
    }
    wrap::lines(&text, width)
}

/// The warning for a file older than [`crate::stats::STALE_AFTER_DAYS`].
pub fn stale(file: &File, now: chrono::DateTime<chrono::Utc>) -> Option<String> {
    let a = file.age(now)?;
    (a.num_days() >= crate::stats::STALE_AFTER_DAYS).then(|| {
        format!(
            "warning: exported {} days ago: production's sizes and statistics may have moved since; export them again (plancheck stats export)",
            a.num_days()
        )
    })
}

fn contents(file: &File) -> String {
    let columns: usize = file.relations.iter().map(|r| r.columns.len()).sum();
    let extended: usize = file.relations.iter().map(|r| r.extended.len()).sum();
    let btrees: Vec<&crate::stats::BTree> = file
        .relations
        .iter()
        .flat_map(|r| r.indexes.iter().filter_map(|i| i.btree.as_ref()))
        .collect();
    let estimated = btrees
        .iter()
        .filter(|b| b.height_from == "estimate")
        .count();
    format!(
        "{} relations, {} with statistics; {columns} column statistics, {extended} extended \
         statistics, {} planner settings; {} B-trees, {}",
        file.relations.len(),
        file.relations
            .iter()
            .filter(|r| !r.columns.is_empty())
            .count(),
        file.settings.len(),
        btrees.len(),
        if estimated == 0 {
            "every height read from its metapage".to_string()
        } else {
            format!(
                "{estimated} heights estimated from their pages (pageinspect's bt_metap was \
                 not callable by the role): costs through them may be a level off"
            )
        }
    )
}

/// What of production's data the file holds.
fn reveals(file: &File) -> String {
    let with_values: usize = file
        .relations
        .iter()
        .map(|r| r.columns.iter().filter(|c| c.holds_values()).count())
        .sum();
    let ends = file
        .relations
        .iter()
        .flat_map(|r| &r.indexes)
        .filter(|i| {
            i.btree
                .as_ref()
                .is_some_and(|b| b.lowest.is_some() || b.highest.is_some())
        })
        .count();
    let redacted = if file.redacted.is_empty() {
        "no column redacted".to_string()
    } else {
        format!("values left out of {}", file.redacted.join(", "))
    };
    format!(
        "it reveals real values of {with_values} columns (most common values, histogram \
         bounds) and the lowest and highest key of {ends} indexes; {redacted} \
         (--redact TABLE.COLUMN leaves a column's values out)"
    )
}

fn kind(relkind: &str) -> &'static str {
    match relkind {
        "p" => "partitioned table",
        "m" => "materialized view",
        _ => "table",
    }
}

fn rows(reltuples: f64) -> String {
    if reltuples < 0.0 {
        "never analysed, no count of".to_string()
    } else {
        format!("{reltuples:.0}")
    }
}

fn age(d: chrono::Duration) -> String {
    let hours = d.num_hours();
    if d.num_seconds() < 0 {
        "in the future by this machine's clock".to_string()
    } else if d.num_minutes() < 1 {
        "under a minute ago".to_string()
    } else if hours < 1 {
        format!("{} minutes ago", d.num_minutes())
    } else if hours < 48 {
        format!("{hours} hours ago")
    } else {
        format!("{} days ago", d.num_days())
    }
}

/// `--table NAME` named nothing.
pub fn no_such_table(name: &str) -> String {
    format!(
        "--table {name}: no table, partitioned table or materialized view of that name the role \
         can see (an unqualified name is looked up by the role's search_path)"
    )
}

/// `--redact PATTERN` matched nothing exported.
pub fn redact_matched_nothing(pattern: &str) -> String {
    format!(
        "--redact {pattern}: no exported column matches it, so nothing would be left out; check \
         the table and column names (the file was not written)"
    )
}

/// What the server gave is out of the file's ranges.
pub fn exported_unreadable(why: &str) -> String {
    format!(
        "the server's statistics are out of the ranges a statistics file allows ({why}); the \
         file was not written"
    )
}
