//! `plancheck completions SHELL`: the shell's completion script, on stdout. The script asks
//! plancheck itself at each completion (`PLANCHECK_COMPLETE=SHELL plancheck -- …`), so read-path and scope
//! names come from the project in the folder the shell is in.

use super::write_stdout;
use crate::cli::CompletionsArgs;
use crate::error::OutputFailure;
use crate::exit_codes;
use crate::report::stderr;

/// The variable the scripts set when they ask plancheck for completions: plancheck's own, so a
/// `COMPLETE` another tool left in the environment never turns a run into a completion.
pub const COMPLETE_VAR: &str = "PLANCHECK_COMPLETE";

pub(super) fn completions(args: CompletionsArgs) -> crate::error::Result<i32> {
    let name = args.shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let shell = shells
        .completer(&name)
        .ok_or_else(|| OutputFailure(stderr::no_completion_script(&name)))?;
    let mut script = Vec::new();
    shell
        .write_registration(
            COMPLETE_VAR,
            "plancheck",
            "plancheck",
            "plancheck",
            &mut script,
        )
        .map_err(|e| OutputFailure(stderr::completion_script_unwritten(&e)))?;
    write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(exit_codes::PASS)
}
