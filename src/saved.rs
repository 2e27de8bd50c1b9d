//! A run's measurements on disk: what `check --save-plans DIR` writes and `plancheck judge DIR`
//! reads back, so a CI artifact can be judged again anywhere, with no database.
//!
//! ```text
//! DIR/run.json              server version, role warnings, lint findings, the checks in order
//! DIR/NAME.SCOPE.json       one measurement per check (crate::measure::Measurement)
//! DIR/before/NAME.SCOPE.json   with --migration: the checks before it
//! ```
//!
//! Every file carries `format` and `version`; a file from a newer plancheck is refused, never
//! half read. Names listed in `run.json` are plain file names: a hand-edited list cannot make
//! `judge` read outside DIR.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{BadInput, OutputFailure};
use crate::files::{self, FileError, Folder};
use crate::measure::{self, Measurement};

/// The `format` of `run.json`.
pub const RUN_FORMAT: &str = "plancheck-run";

/// A whole run, measured: what a report is judged from.
#[derive(Debug, Clone)]
pub struct Run {
    pub format: String,
    pub version: u32,
    pub facts: RunFacts,
    pub checks: Vec<Measurement>,
    pub before: Option<Vec<Measurement>>,
}

/// What a run learnt of its server before the checks, saved with them and reported beside them.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// `server_version` as the server reports it.
    pub server_version: String,
    /// Rights of the connecting role that reach outside the rolled-back transaction.
    pub role_warnings: Vec<crate::db::role::RoleRisk>,
    /// Twin drift and invalid indexes found before the checks.
    pub lint: Vec<crate::lint::Finding>,
    /// With --migration: what it did to the indexes the checks require.
    pub index_changes: Vec<crate::model::IndexChange>,
    /// With --migration: how long its locks were held, against --migration-hold.
    pub migration_hold: Option<crate::model::MigrationHold>,
}

/// `run.json`.
#[derive(Debug, Serialize, Deserialize)]
struct RunFile {
    format: String,
    version: u32,
    server_version: String,
    #[serde(default)]
    role_warnings: Vec<crate::db::role::RoleRisk>,
    #[serde(default)]
    lint: Vec<crate::lint::Finding>,
    /// With --migration: what it did to the indexes the checks require.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    index_changes: Vec<crate::model::IndexChange>,
    /// With --migration: how long its locks were held, against --migration-hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    migration_hold: Option<crate::model::MigrationHold>,
    /// The measurement files, in the report's order.
    checks: Vec<String>,
    /// With --migration: the measurement files of the checks before it, under `before/`.
    #[serde(default)]
    before: Option<Vec<String>>,
}

fn file_name(m: &Measurement) -> String {
    format!("{}.{}.json", m.read_path, m.scope)
}

fn write_json(dir: &Folder, name: &str, value: &impl Serialize) -> Result<(), OutputFailure> {
    let fail = |e: &dyn std::fmt::Display| OutputFailure(format!("--save-plans {e}"));
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| fail(&format!("{}: {e}", dir.shown(Path::new(name)))))?;
    text.push('\n');
    // Replaced, never written through: a link committed where a file goes is not followed.
    dir.replace(Path::new(name), text.as_bytes())
        .map_err(|e| fail(&e))
}

/// The folder `--save-plans DIR` names, made when missing (under `before/` for the checks
/// before a migration), no link followed below where it is anchored.
fn folder(dir: &Path, before: bool) -> Result<Folder, OutputFailure> {
    let fail = |e: FileError| OutputFailure(format!("--save-plans {e}"));
    let folder = Folder::for_writing(dir).map_err(fail)?;
    if before {
        folder.folder(Path::new("before"), true).map_err(fail)
    } else {
        Ok(folder)
    }
}

/// Writes one check's measurement into `dir` (under `before/` for a check before a migration),
/// as soon as it is measured, so a run of thousands of checks need not hold them all; returns
/// the file's name, for [`write_run`].
pub fn write_check(dir: &Path, before: bool, m: &Measurement) -> Result<String, OutputFailure> {
    let folder = folder(dir, before)?;
    let name = file_name(m);
    write_json(&folder, &name, m)?;
    Ok(name)
}

/// Moves the measurements `names` from `dir/before/` to `dir`: a run that was to apply a
/// migration saved its first checks under before/, and was stopped before applying it.
pub fn unnest_before(dir: &Path, names: &[String]) -> Result<(), OutputFailure> {
    let folder = folder(dir, false)?;
    for name in names {
        folder
            .rename(&Path::new("before").join(name), Path::new(name))
            .map_err(|e| OutputFailure(format!("--save-plans {e}")))?;
    }
    folder.remove_empty_folder(Path::new("before"));
    Ok(())
}

/// Writes `run.json`: the run's facts and its measurement files, in the report's order.
pub fn write_run(
    dir: &Path,
    facts: &RunFacts,
    checks: Vec<String>,
    before: Option<Vec<String>>,
) -> Result<(), OutputFailure> {
    write_json(
        &folder(dir, false)?,
        "run.json",
        &RunFile {
            format: RUN_FORMAT.into(),
            version: measure::VERSION,
            server_version: facts.server_version.clone(),
            role_warnings: facts.role_warnings.clone(),
            lint: facts.lint.clone(),
            index_changes: facts.index_changes.clone(),
            migration_hold: facts.migration_hold.clone(),
            checks,
            before,
        },
    )
}

/// Reads one JSON file of the saved form, `rel` inside the saved folder: a regular file, no
/// link followed, at most [`files::SAVED`] bytes; parsed with the depth bound plans need.
fn read_json<T: serde::de::DeserializeOwned>(dir: &Folder, rel: &Path) -> Result<T, BadInput> {
    let bytes = dir
        .read(rel, files::SAVED)
        .map_err(|e| BadInput(e.to_string()))?
        .ok_or_else(|| BadInput(format!("{}: no such file", dir.shown(rel))))?;
    parse_saved(Path::new(&dir.shown(rel)), bytes)
}

/// The JSON of a saved file read from `path`.
fn parse_saved<T: serde::de::DeserializeOwned>(path: &Path, bytes: Vec<u8>) -> Result<T, BadInput> {
    let shown = path.display();
    let text = String::from_utf8(bytes)
        .map_err(|e| BadInput(format!("{shown}: not UTF-8 text: {}", e.utf8_error())))?;
    // Syntax first, with the line and column serde_json gives; then the depth-bounded parse.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&text)
        && !e.to_string().contains("recursion limit")
    {
        return Err(BadInput(format!(
            "{shown}:{}:{}: {e}",
            e.line(),
            e.column()
        )));
    }
    let value =
        crate::plan::explain::parse_json(&text).map_err(|e| BadInput(format!("{shown}: {e}")))?;
    check_version(path, &value)?;
    serde_json::from_value(value).map_err(|e| BadInput(format!("{shown}: {e}")))
}

/// A saved measurement, its plan baseline (copied from the project's file) read as `check`
/// reads one: a baseline that is not a plan shape is refused, never shown in a diff.
fn read_measurement(dir: &Folder, rel: &Path) -> Result<Measurement, BadInput> {
    let mut m: Measurement = read_json(dir, rel)?;
    if let Some(text) = &m.requires.baseline {
        let body = crate::verdict::baseline::parse(text).map_err(|line| {
            BadInput(format!(
                "{}: line {line} of its plan baseline is not a plan shape",
                dir.shown(rel)
            ))
        })?;
        m.requires.baseline = Some(body);
    }
    Ok(m)
}

fn check_version(path: &Path, value: &serde_json::Value) -> Result<(), BadInput> {
    let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if format != RUN_FORMAT && format != measure::FORMAT {
        return Err(BadInput(format!(
            "{}: not a file plancheck saved (its `format` is {:?}, expected {RUN_FORMAT} or {})",
            path.display(),
            format,
            measure::FORMAT
        )));
    }
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version == 0 || version > u64::from(measure::VERSION) {
        return Err(BadInput(format!(
            "{}: saved form version {version}, and this plancheck reads versions 1 to {} \
             (judge it with the plancheck that saved it, or a newer one)",
            path.display(),
            measure::VERSION
        )));
    }
    Ok(())
}

/// A name listed in `run.json`, as a path inside the saved folder (under `folder`).
fn listed(folder: &str, run_json: &str, name: &str) -> Result<PathBuf, BadInput> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && name.ends_with(".json");
    if !plain {
        return Err(BadInput(format!(
            "{run_json}: {name:?} is not the name of a measurement file in this folder"
        )));
    }
    Ok(Path::new(folder).join(name))
}

/// Reads the run saved in `dir` (the folder as named; no link followed inside it).
pub fn read(dir: &Path) -> Result<Run, BadInput> {
    let missing = || {
        BadInput(format!(
            "{}: no run.json here; `plancheck check --save-plans {}` writes one",
            dir.display(),
            dir.display()
        ))
    };
    let folder = Folder::open(dir).map_err(|e| match e.why {
        files::Why::Io(io) if io.kind() == std::io::ErrorKind::NotFound => missing(),
        _ => BadInput(e.to_string()),
    })?;
    let run_json = Path::new("run.json");
    let shown = folder.shown(run_json);
    let bytes = folder
        .read(run_json, files::SAVED)
        .map_err(|e| BadInput(e.to_string()))?
        .ok_or_else(missing)?;
    let file: RunFile = parse_saved(Path::new(&shown), bytes)?;
    let read_all = |sub: &str, names: &[String]| -> Result<Vec<Measurement>, BadInput> {
        names
            .iter()
            .map(|n| read_measurement(&folder, &listed(sub, &shown, n)?))
            .collect()
    };
    let checks = read_all("", &file.checks)?;
    let before = match &file.before {
        Some(names) => Some(read_all("before", names)?),
        None => None,
    };
    Ok(Run {
        format: file.format,
        version: file.version,
        facts: RunFacts {
            server_version: file.server_version,
            role_warnings: file.role_warnings,
            lint: file.lint,
            index_changes: file.index_changes,
            migration_hold: file.migration_hold,
        },
        checks,
        before,
    })
}
