//! The project loader on arbitrary files: an expectation, its plan and plancheck.toml, held in
//! memory and read through the same code as a project folder (`Source::Memory`). The input is
//! split at 0xFF bytes (never part of UTF-8 text): `expectation [0xFF plan [0xFF plancheck.toml]]`.
//!
//! Beyond "never panic", every error must be located: each names one of the three files with
//! `:line:col:` and shows the line, as the README promises.

#![no_main]

use libfuzzer_sys::fuzz_target;
use plancheck::project::{self, Filter, Source};

const FILES: [&str; 3] = ["expectations/path.toml", "plans/path.sql", "plancheck.toml"];

/// `path:LINE:COL: ` at the start of a message, for one of the files.
fn is_located(message: &str) -> bool {
    FILES.iter().any(|f| {
        let Some(rest) = message.strip_prefix(f).and_then(|r| r.strip_prefix(':')) else {
            return false;
        };
        let mut parts = rest.splitn(3, ':');
        let line = parts.next().unwrap_or("");
        let col = parts.next().unwrap_or("");
        let tail = parts.next().unwrap_or("");
        !line.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
            && !col.is_empty()
            && col.bytes().all(|b| b.is_ascii_digit())
            && tail.starts_with(' ')
            && tail.lines().nth(1).is_some_and(|l| l.trim() == "|")
            && tail.lines().nth(2).is_some_and(|l| l.starts_with(line))
    })
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xff);
    let mut files = Vec::new();
    for name in FILES {
        if let Some(bytes) = parts.next() {
            files.push((name.to_string(), bytes.to_vec()));
        }
    }
    let source = Source::Memory(files);
    match project::load(&source, &Filter::default()) {
        Err(e) => assert!(is_located(&e.0), "an error without file:line:col: {e}"),
        Ok(p) => {
            for rp in &p.read_paths {
                for c in &rp.checks {
                    let _ = project::max_placeholder(&c.sql.text);
                    // Every position of the rendered SQL maps back into the plan file.
                    for (offset, _) in c.sql.text.char_indices().take(4096) {
                        let src = c.sql.source_offset(offset);
                        assert!(src <= c.sql.source().len());
                        assert!(c.sql.source().is_char_boundary(src));
                    }
                }
            }
        }
    }
});
