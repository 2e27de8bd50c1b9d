//! cli: the command line, parsed into plain data. Validation and the merge with the environment
//! happen in [`crate::run`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::Format;

/// Checks that PostgreSQL still chooses the index each read path needs, in every scope.
#[derive(Debug, Parser)]
#[command(name = "plancheck", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every check against a database and print the pass/fail table.
    Check(CheckArgs),
    /// Check that each partial index and its unfiltered twin still match, and are valid.
    Lint(LintArgs),
    /// Start a throwaway PostgreSQL, load the reference board, run every check, remove it all.
    Demo(DemoArgs),
    /// The reference board.
    #[command(subcommand)]
    Fixtures(FixturesCommand),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Connection URL or key=value string
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Project folder holding plans/, expectations/ and plancheck.toml
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Connection URL or key=value string
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Project folder holding plans/, expectations/ and plancheck.toml
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Size of the board, as a fraction of the full one (1 = 2,343,847 posts)
    #[arg(long, default_value_t = crate::DEMO_SCALE, value_name = "S")]
    pub scale: f64,
    /// Where the throwaway server comes from
    #[arg(long, value_enum, default_value = "auto")]
    pub server: crate::db::provider::Provider,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What `check` and `demo` share.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Check only this read path (repeatable)
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
    /// Check only in this scope (repeatable)
    #[arg(long, value_name = "NAME")]
    pub scope: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Discarded runs before measuring each check
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub warmup: u32,
    /// Measured runs per check
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// What a check must show: the index chosen, or only usable (not-chosen then warns)
    #[arg(long, value_enum, default_value = "chosen")]
    pub require: crate::verdict::Require,
    /// Print the plan of every failing check as a compact tree
    #[arg(long)]
    pub explain: bool,
    /// Write each check's EXPLAIN documents into this folder
    #[arg(long, value_name = "DIR")]
    pub save_plans: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum FixturesCommand {
    /// Load the reference board into a database, replacing a board already there
    Load(LoadArgs),
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Connection URL or key=value string
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Size of the board, as a fraction of the full one (1 = 2,343,847 posts)
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub scale: f64,
}
