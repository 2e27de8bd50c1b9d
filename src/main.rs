//! The plancheck binary: parse the arguments, run, map the outcome to an exit status.

use clap::Parser;

/// mimalloc in place of glibc's malloc: a check allocates and frees thousands of small values
/// (EXPLAIN documents, the guard's settings), and glibc's allocator was a third of plancheck's
/// own instructions (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
