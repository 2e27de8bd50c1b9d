//! `plancheck init`: a minimal project to start from, so the first run in an empty folder checks
//! something instead of failing on missing folders.

use std::path::Path;

use crate::cli::InitArgs;
use crate::report::stderr;
use crate::term::say;
use crate::{exit_codes, project};

pub(super) fn init(args: InitArgs) -> crate::error::Result<i32> {
    for path in project::starter::write(&args.dir)? {
        say!("{}", stderr::wrote(&path));
    }
    say!("{}", stderr::init_next(&shown(&args.dir)));
    Ok(exit_codes::PASS)
}

fn shown(dir: &Path) -> String {
    let s = dir.display().to_string();
    if s.is_empty() { ".".into() } else { s }
}
