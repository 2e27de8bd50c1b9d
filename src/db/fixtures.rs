//! Loads the reference board (`fixtures/*.sql`, built into the binary) into a database:
//! schema (replacing a board already there), rows made by the server with set-based SQL,
//! indexes after the load, `ANALYZE` at the end. Progress goes to stderr, a line per step.

use std::time::Instant;

use tokio_postgres::Client;

use super::cause;
use crate::errors::{BadInput, DatabaseFailure};
use crate::project::Source;

/// The files, in the order they run.
const FILES: [&str; 3] = [
    "fixtures/schema.sql",
    "fixtures/load.sql",
    "fixtures/indexes.sql",
];

/// One step of the load: a label for the progress line and the SQL batch.
struct Step {
    label: String,
    sql: String,
}

/// Splits a fixture file at its `-- step: LABEL` lines. Text before the first marker is a step
/// labelled by the file.
fn steps(file: &str, text: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".sql");
    let mut current = Step {
        label: stem.to_string(),
        sql: String::new(),
    };
    for line in text.lines() {
        if let Some(label) = line.trim().strip_prefix("-- step:") {
            if !current.sql.trim().is_empty() {
                out.push(current);
            }
            current = Step {
                label: label.trim().to_string(),
                sql: String::new(),
            };
        } else {
            current.sql.push_str(line);
            current.sql.push('\n');
        }
    }
    if !current.sql.trim().is_empty() {
        out.push(current);
    }
    out
}

/// Checks a scale given on the command line.
pub fn validate_scale(scale: f64) -> Result<f64, BadInput> {
    if !scale.is_finite() || scale <= 0.0 || scale > 1.0 {
        return Err(BadInput(format!(
            "--scale {scale}: must be above 0 and at most 1 (1 is the full board: 2,343,847 posts)"
        )));
    }
    Ok(scale)
}

/// Loads the board at `scale` (1 = the full board). Returns the seconds it took.
pub async fn load(client: &Client, scale: f64, quiet: bool) -> Result<f64, DatabaseFailure> {
    let started = Instant::now();
    let source = Source::Embedded;
    let mut all = Vec::new();
    for file in FILES {
        let text = source
            .read(file)
            .ok()
            .flatten()
            .ok_or_else(|| DatabaseFailure(format!("{file} is missing from this build")))?;
        all.extend(steps(file, &text));
    }
    client
        .batch_execute(&format!(
            "SET plancheck.scale = '{scale}'; SET statement_timeout = 0; \
             SET client_min_messages = warning"
        ))
        .await
        .map_err(|e| DatabaseFailure(format!("could not start the load: {}", cause(&e))))?;
    let total = all.len();
    for (i, step) in all.iter().enumerate() {
        let t = Instant::now();
        if !quiet {
            crate::say_part!(
                "loading the reference board (scale {scale}): [{}/{total}] {} …",
                i + 1,
                step.label
            );
        }
        client.batch_execute(&step.sql).await.map_err(|e| {
            if !quiet {
                crate::say!();
            }
            DatabaseFailure(format!(
                "loading the board failed at step `{}`: {}",
                step.label,
                cause(&e)
            ))
        })?;
        if !quiet {
            crate::say!(" {:.1} s", t.elapsed().as_secs_f64());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if !quiet {
        crate::say!("loaded the reference board at scale {scale} in {secs:.1} s");
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_split_at_markers() {
        let s = steps(
            "fixtures/load.sql",
            "set x = 1;\n-- step: members\ninsert a;\n-- step: posts\ninsert b;\n",
        );
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["load", "members", "posts"]);
        assert_eq!(s[2].sql.trim(), "insert b;");
    }

    #[test]
    fn scale_out_of_range_is_bad_input() {
        assert!(validate_scale(0.0).is_err());
        assert!(validate_scale(-1.0).is_err());
        assert!(validate_scale(f64::NAN).is_err());
        assert!(validate_scale(1.5).is_err());
        assert_eq!(validate_scale(0.05).unwrap(), 0.05);
    }
}
