//! `plancheck completions SHELL`: the shell's completion script, on stdout.

use clap::CommandFactory;

use super::write_stdout;
use crate::cli::{Cli, CompletionsArgs};
use crate::exit_codes;

pub(super) fn completions(args: CompletionsArgs) -> crate::error::Result<i32> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "plancheck", &mut script);
    write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(exit_codes::PASS)
}
