//! The plancheck binary: parse the arguments, run, map the outcome to an exit status.

use clap::Parser;

fn main() {
    // `PLANCHECK_COMPLETE=bash plancheck …`: the shell asking for completions (the script that
    // `plancheck completions SHELL` prints); answered here, before anything else runs.
    clap_complete::CompleteEnv::with_factory(
        <plancheck::cli::Cli as clap::CommandFactory>::command,
    )
    .var(plancheck::app::COMPLETE_VAR)
    .complete();
    let cli = plancheck::cli::Cli::parse();
    std::process::exit(plancheck::main_with(cli));
}
