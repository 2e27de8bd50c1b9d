//! What `plancheck lint` prints, and the findings as the table's `indexes:` section shows them.

/// Output formats of `plancheck lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LintFormat {
    Table,
    Json,
}

/// Lint findings as text: each problem once, after the read paths it is about, then the
/// definitions involved one under the other.
pub fn lint_findings(findings: &[crate::lint::Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!("{}: {}\n", f.read_paths().join(", "), f.problem));
        for d in &f.definitions {
            out.push_str(&format!("    {d}\n"));
        }
    }
    out
}

/// What `plancheck lint` prints: the findings, or a line saying there are none.
pub fn lint(findings: &[crate::lint::Finding], read_paths: usize, format: LintFormat) -> String {
    match format {
        LintFormat::Json => {
            let mut t = serde_json::to_string_pretty(&serde_json::json!({ "findings": findings }))
                .unwrap_or_else(|e| format!("{{\"error\": \"could not serialise: {e}\"}}"));
            t.push('\n');
            t
        }
        LintFormat::Table if findings.is_empty() => format!(
            "no twin drift: {read_paths} read paths, every required index present, valid and \
             ready\n"
        ),
        LintFormat::Table => lint_findings(findings),
    }
}
