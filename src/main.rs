//! The plancheck binary: parse the arguments, run, map the outcome to an exit status.

use clap::Parser;

fn main() {
    let cli = plancheck::cli::Cli::parse();
    std::process::exit(plancheck::main_with(cli));
}
