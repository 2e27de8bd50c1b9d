//! cli: the command line, parsed into plain data; [`settings`] merges it with the environment,
//! once, in the precedence written there.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub mod settings;

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
    /// List the checks a run would make (read path × scope), with no database.
    List(ListArgs),
    /// Judge the measurements a run saved with --save-plans, with no database at all.
    Judge(JudgeArgs),
    /// Record the shape of each check's plans as its baseline (baselines/NAME.SCOPE.plan in the
    /// project folder)
    Accept(AcceptArgs),
    /// Write a minimal project (plancheck.toml, one example plan and expectation) to start from
    Init(InitArgs),
    /// Write plans and expectations from a server log of what the application sent, planning
    /// each statement on the database (read-only, rolled back) as check does; existing files in
    /// the project folder are never overwritten
    Capture(CaptureArgs),
    /// Print a shell completion script: plancheck completions bash > /etc/bash_completion.d/plancheck
    Completions(CompletionsArgs),
    /// Start a throwaway PostgreSQL, load the reference board, run every check, remove it all.
    Demo(DemoArgs),
    /// Put the read paths under load, rung by rung: requests arriving on a fixed schedule
    /// (open-loop) through a pool of sessions, each run as a check runs it (read-only, bounded,
    /// rolled back); p50/p95/p99 and lateness per rung and per page, and where the shoulder is.
    /// It loads the server: see "plancheck ladder" in the documentation before pointing it at a
    /// shared one
    Ladder(LadderArgs),
    /// The reference board.
    #[command(subcommand)]
    Fixtures(FixturesCommand),
    /// Production's statistics, as a file: `stats export` reads them from a server's catalog
    /// (read-only), `stats show` says what a file holds and how old it is
    #[command(subcommand)]
    Stats(StatsCommand),
    /// Print the database server's major version and the local server binaries of that major
    /// the scratch copy would be made with (`major=N`, `bin=DIR`, empty when there are none),
    /// for a CI step that installs them where none are found
    ScratchBinaries(ScratchBinariesArgs),
}

/// Where the database is: one declaration for every command that connects.
#[derive(Debug, Args)]
pub struct ConnectOpts {
    /// Connection URL or key=value string (else libpq's PG* variables)
    #[arg(
        help_heading = "Connection",
        long,
        value_name = "URL",
        env = "DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
}

/// Where the project is: one declaration for every command that reads or writes one.
#[derive(Debug, Args)]
pub struct ProjectOpts {
    /// Project folder holding plans/, expectations/ and plancheck.toml
    #[arg(
        help_heading = "Selection",
        long = "project",
        value_name = "DIR",
        default_value = "."
    )]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    #[command(flatten)]
    pub project: ProjectOpts,
    /// Check before and after this migration, applied in a transaction that is rolled back
    #[arg(help_heading = "Measurement", long, value_name = "FILE.sql")]
    pub migration: Option<PathBuf>,
    /// With --migration: also ANALYZE the existing tables it alters (resets their autovacuum
    /// counters, which the rollback does not restore)
    #[arg(help_heading = "Measurement", long, requires = "migration")]
    pub analyze: bool,
    /// When a re-plan cannot settle whether the required index is usable, drop the indexes that
    /// beat it in a read-write transaction that is rolled back, and re-plan (an ACCESS EXCLUSIVE
    /// lock on the table for the moment of planning: for a database that is yours). For a
    /// machine without local PostgreSQL binaries of the server's major version, where the scratch
    /// copy cannot settle it; unlike the copy, it gives the planner's costs at this data
    #[arg(help_heading = "Verdicts", long, conflicts_with = "migration")]
    pub replan_without_rivals: bool,
    /// Refuse to run (exit 2) when the role's rights reach outside the rolled-back transaction
    /// (superuser, pg_signal_backend, COPY … PROGRAM, dblink, …)
    #[arg(help_heading = "Safety", long)]
    pub strict_role: bool,
    /// With --migration: longest its locks may be held, from its BEGIN to its rollback (an
    /// ALTER TABLE or DROP INDEX makes every other session's read of the table wait until then);
    /// once reached, the checks after it still to run are not run (error) and it is rolled back
    #[arg(help_heading = "Safety", long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration, requires = "migration")]
    pub migration_hold: Duration,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    #[command(flatten)]
    pub project: ProjectOpts,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: LintFormatArg,
}

#[derive(Debug, Args)]
pub struct ScratchBinariesArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
}

/// Which checks: one declaration for every command that runs or lists some of them.
#[derive(Debug, Clone, Args)]
pub struct SelectOpts {
    /// Only this read path (repeatable)
    #[arg(
        help_heading = "Selection",
        long,
        value_name = "NAME",
        add = clap_complete::ArgValueCandidates::new(|| names(Names::ReadPaths))
    )]
    pub only: Vec<String>,
    /// Only in this scope (repeatable)
    #[arg(
        help_heading = "Selection",
        long,
        value_name = "NAME",
        add = clap_complete::ArgValueCandidates::new(|| names(Names::Scopes))
    )]
    pub scope: Vec<String>,
    /// This runner's share of a suite split across N runners: K/N or slice:K/N (dealt in name
    /// order), hash:K/N (placed by a hash of read path and scope); join the runners'
    /// --save-plans folders with `plancheck judge DIR...`
    #[arg(help_heading = "Selection", long, value_name = "K/N")]
    pub partition: Option<crate::project::Partition>,
}

/// Which names a shell completes.
enum Names {
    ReadPaths,
    Scopes,
}

/// The read paths or scopes of the project in the folder the shell is in, for completion; none
/// where there is no project there, or it does not load.
fn names(which: Names) -> Vec<clap_complete::CompletionCandidate> {
    let filter = crate::project::Filter::default();
    let Ok(project) = crate::project::load(&crate::project::Source::Dir(".".into()), &filter)
    else {
        return Vec::new();
    };
    let names: Vec<String> = match which {
        Names::ReadPaths => project.read_paths.iter().map(|r| r.name.clone()).collect(),
        Names::Scopes => project.scope_names.clone(),
    };
    names
        .into_iter()
        .map(clap_complete::CompletionCandidate::new)
        .collect()
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub project: ProjectOpts,
    #[command(flatten)]
    pub select: SelectOpts,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: LintFormatArg,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write it (created if needed); nothing that exists is overwritten
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

/// The bounds of a command that plans each read path once (`accept`, `capture`).
#[derive(Debug, Args)]
pub struct PlanBounds {
    /// Longest a statement may run: 30s, 500ms, 2min
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// Longest a statement may wait for a lock
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub lock_timeout: Duration,
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    #[command(flatten)]
    pub project: ProjectOpts,
    #[command(flatten)]
    pub select: SelectOpts,
    /// No progress on stderr
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub bounds: PlanBounds,
}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// A PostgreSQL server log (csvlog, jsonlog, or stderr) taken with log_statement = 'all' or
    /// log_min_duration_statement = 0 (repeatable)
    #[arg(long, value_name = "FILE", required = true)]
    pub log: Vec<PathBuf>,
    /// The logs' format [default: by extension: .csv csvlog, .json jsonlog, else stderr]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormatArg>,
    /// The server's log_line_prefix, for a stderr log
    #[arg(long, value_name = "PREFIX", default_value = crate::capture::log::DEFAULT_LINE_PREFIX)]
    pub log_line_prefix: String,
    #[command(flatten)]
    pub connect: ConnectOpts,
    #[command(flatten)]
    pub project: ProjectOpts,
    /// The scope the log was taken under (a member's run of the test suite, a moderator's)
    #[arg(long, value_name = "NAME", default_value = "captured")]
    pub scope: String,
    /// Propose an expectation only where the plan uses an index on a relation of at least this
    /// many rows
    #[arg(long, value_name = "ROWS", default_value_t = 10_000)]
    pub min_rows: u64,
    /// Print what would be written, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// No progress on stderr
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub bounds: PlanBounds,
}

/// A server log's format (PostgreSQL's log_destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormatArg {
    Csvlog,
    Jsonlog,
    Stderr,
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// A folder written by `check --save-plans`; several (one per --partition runner) are
    /// joined into one report with one exit status
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// How checks are judged and reported: what `check`, `demo` and `judge` share.
#[derive(Debug, Clone, Args)]
pub struct VerdictArgs {
    /// Output format
    #[arg(help_heading = "Output", long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// What a check must show: the index chosen, or only usable (not-chosen then warns)
    #[arg(help_heading = "Verdicts", long, value_enum, default_value = "chosen")]
    pub require: RequireArg,
    /// A relation of at least this many rows (the planner's estimate) read whole fails the
    /// check under every --require; any scan that read at least half of it read it whole
    #[arg(
        help_heading = "Verdicts",
        long,
        default_value_t = 10_000.0,
        value_name = "ROWS"
    )]
    pub large_rows: f64,
    /// A plan that changed shape from its baseline (baselines/) fails the run instead of warning
    #[arg(help_heading = "Verdicts", long)]
    pub strict_plans: bool,
    /// A verdict the data decides, on a plan over a relation never analysed: no-statistics, exit
    /// status 5 when nothing fails (stop), or judged at the planner's guesses (judge)
    #[arg(
        help_heading = "Verdicts",
        long,
        value_enum,
        default_value = "stop",
        value_name = "WHAT"
    )]
    pub unanalysed: UnanalysedArg,
    /// Print the whole reasoning of every failing check (costs, proofs), and its plan as a
    /// compact tree
    #[arg(help_heading = "Output", long)]
    pub explain: bool,
    /// Colour the verdicts: on a terminal unless NO_COLOR is set (auto), always, never
    #[arg(
        help_heading = "Output",
        long,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: ColorArg,
    /// Also write the report in this format to this file, in the same run (repeatable):
    /// junit=out/plancheck.xml, markdown=summary.md, json=…, github=…, table=…
    #[arg(help_heading = "Output", long, value_name = "FORMAT=FILE", value_parser = parse_report_file)]
    pub report: Vec<ReportFile>,
}

impl Default for VerdictArgs {
    /// What the flags default to (a test holds the two together): for a report judged with no
    /// flags of its own, as `ladder --checks` judges its saved run.
    fn default() -> Self {
        VerdictArgs {
            format: FormatArg::Table,
            require: RequireArg::Chosen,
            large_rows: 10_000.0,
            strict_plans: false,
            unanalysed: UnanalysedArg::Stop,
            explain: false,
            color: ColorArg::Auto,
            report: Vec::new(),
        }
    }
}

/// `plancheck ladder`'s arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("rungs").required(true).args(["rates", "members"])))]
pub struct LadderArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    #[command(flatten)]
    pub project: ProjectOpts,
    #[command(flatten)]
    pub select: SelectOpts,
    /// Sessions the requests share, as the application's connection pool does
    #[arg(help_heading = "Load", long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub pool: u16,
    /// The rungs as requests a second: 5,25,100
    #[arg(
        help_heading = "Load",
        long,
        value_delimiter = ',',
        value_name = "R1,R2,…"
    )]
    pub rates: Vec<f64>,
    /// The rungs as members, each asking for a page every --interval: 50,250,1000
    #[arg(
        help_heading = "Load",
        long,
        value_delimiter = ',',
        value_name = "M1,M2,…"
    )]
    pub members: Vec<u64>,
    /// How often each member asks for a page, with --members
    #[arg(help_heading = "Load", long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Duration,
    /// Seconds at the start of each rung whose requests are run and not measured
    #[arg(help_heading = "Load", long, default_value_t = 10, value_name = "S")]
    pub warmup_seconds: u64,
    /// The shortest measured window of a rung, in seconds; it goes on (up to 4×) until it
    /// holds --min-requests and its queue is steady
    #[arg(help_heading = "Load", long, default_value_t = 30, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    pub rung_seconds: u64,
    /// Fewest requests a rung's measured window holds
    #[arg(help_heading = "Load", long, default_value_t = 400, value_name = "N")]
    pub min_requests: u64,
    /// How arrivals are spaced: evenly, or as a Poisson process (seeded by --seed)
    #[arg(help_heading = "Load", long, value_enum, default_value = "fixed")]
    pub arrivals: ArrivalsArg,
    /// The seed of the Poisson arrivals and of the pages' draw
    #[arg(help_heading = "Load", long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
    /// The highest rate a rung may offer (requests a second); a higher one is refused
    #[arg(
        help_heading = "Safety",
        long,
        default_value_t = 1000.0,
        value_name = "R"
    )]
    pub max_rate: f64,
    /// The longest the whole ladder may run, in seconds; the rung running then ends, marked
    /// partial
    #[arg(help_heading = "Safety", long, default_value_t = 900, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_seconds: u64,
    /// Longest one request may run
    #[arg(help_heading = "Safety", long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// Refuse to run (exit 2) when the role's rights reach outside the rolled-back transaction
    /// (superuser, pg_signal_backend, COPY … PROGRAM, dblink, …)
    #[arg(help_heading = "Safety", long)]
    pub strict_role: bool,
    /// A run `check --save-plans DIR` saved: its checks, judged, go on the page with the ladder
    /// (the setup, the time budgets one read at a time, the EXPLAIN evidence) in --format
    /// markdown and json; the reference board's page is measured with `check --iterations 60
    /// --warmup 8`
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub checks: Option<PathBuf>,
    /// Output format
    #[arg(help_heading = "Output", long, value_enum, default_value = "table")]
    pub format: LadderFormat,
    /// Also write the report in FORMAT to FILE (repeatable): json=ladder.json, svg=ladder.svg
    #[arg(help_heading = "Output", long = "report", value_name = "FORMAT=FILE", value_parser = parse_ladder_report)]
    pub report: Vec<(LadderFormat, PathBuf)>,
    /// No progress on stderr
    #[arg(help_heading = "Output", short, long)]
    pub quiet: bool,
}

/// `plancheck ladder --arrivals`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalsArg {
    Fixed,
    Poisson,
}

/// `plancheck ladder --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LadderFormat {
    /// The ladder, the per-page breakdown and the shoulder
    Table,
    /// One JSON document: per rung and per page, offered, served, errors, p50/p95/p99 and
    /// late p95
    Json,
    /// The ladder and the per-page breakdown as Markdown tables, in a performance page's columns
    Markdown,
    /// A chart of p95 and late p95 against the offered rate, a line per page (SVG)
    Svg,
}

fn parse_ladder_report(text: &str) -> Result<(LadderFormat, PathBuf), String> {
    use clap::ValueEnum;
    let (format, path) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: write FORMAT=FILE, e.g. json=ladder.json"))?;
    let format = LadderFormat::from_str(format, true).map_err(|_| {
        format!("{format:?}: not a ladder report format (table, json, markdown or svg)")
    })?;
    if path.is_empty() {
        return Err(format!("{text:?}: no file after the `=`"));
    }
    Ok((format, PathBuf::from(path)))
}

/// `--format`, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// The pass/fail table, fitted to the terminal
    Table,
    /// One JSON document (stable: fields are only ever added)
    Json,
    /// JUnit XML, a testcase per read path and scope, for CI test reporters
    Junit,
    /// GitHub Actions annotations on the expectation files
    Github,
    /// Markdown tables, for a CI job summary
    Markdown,
}

impl From<FormatArg> for crate::report::Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Table => crate::report::Format::Table,
            FormatArg::Json => crate::report::Format::Json,
            FormatArg::Junit => crate::report::Format::Junit,
            FormatArg::Github => crate::report::Format::Github,
            FormatArg::Markdown => crate::report::Format::Markdown,
        }
    }
}

/// `lint --format`, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormatArg {
    Table,
    Json,
}

impl From<LintFormatArg> for crate::report::LintFormat {
    fn from(f: LintFormatArg) -> Self {
        match f {
            LintFormatArg::Table => crate::report::LintFormat::Table,
            LintFormatArg::Json => crate::report::LintFormat::Json,
        }
    }
}

/// `--color`, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorArg {
    /// On a terminal, unless NO_COLOR is set
    Auto,
    /// Even through a pipe, and under NO_COLOR
    Always,
    Never,
}

/// `--report FORMAT=FILE`: a report written to a file beside the one on stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFile {
    pub format: FormatArg,
    pub path: PathBuf,
}

fn parse_report_file(text: &str) -> Result<ReportFile, String> {
    use clap::ValueEnum;
    let formats = || {
        FormatArg::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value().map(|v| v.get_name().to_owned()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((format, path)) = text.split_once('=') else {
        return Err(format!(
            "`{text}` is not FORMAT=FILE (junit=out/plancheck.xml; formats: {})",
            formats()
        ));
    };
    let format = FormatArg::from_str(format, true)
        .map_err(|_| format!("unknown format `{format}` (formats: {})", formats()))?;
    if path.is_empty() {
        return Err(format!("`{text}` names no file"));
    }
    Ok(ReportFile {
        format,
        path: PathBuf::from(path),
    })
}

/// `--server`, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderArg {
    /// Docker where an engine answers (and PLANCHECK_PG_BIN is not set), else local binaries.
    Auto,
    /// Local server binaries.
    Local,
    /// A container, through a Docker engine.
    Docker,
}

impl From<ProviderArg> for crate::server::provider::Provider {
    fn from(p: ProviderArg) -> Self {
        match p {
            ProviderArg::Auto => crate::server::provider::Provider::Auto,
            ProviderArg::Local => crate::server::provider::Provider::Local,
            ProviderArg::Docker => crate::server::provider::Provider::Docker,
        }
    }
}

/// `--require`, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RequireArg {
    Chosen,
    Usable,
}

/// `--unanalysed`: what a verdict the data decides is, on a plan over a relation never analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnanalysedArg {
    /// `no-statistics`: neither a pass nor a failure; exit status 5 when nothing fails
    Stop,
    /// Judged at the planner's guesses, as if they were statistics
    Judge,
}

impl From<RequireArg> for crate::verdict::Require {
    fn from(r: RequireArg) -> Self {
        match r {
            RequireArg::Chosen => crate::verdict::Require::Chosen,
            RequireArg::Usable => crate::verdict::Require::Usable,
        }
    }
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Size of the board, as a fraction of the full one (1 = 2,343,847 posts)
    #[arg(long, default_value_t = crate::DEMO_SCALE, value_name = "S")]
    pub scale: f64,
    /// Where the throwaway server comes from
    #[arg(long, value_enum, default_value = "auto")]
    pub server: ProviderArg,
    /// Build the board afresh, ignoring and replacing the cached one (local server binaries
    /// keep the loaded board under ~/.cache/plancheck, or PLANCHECK_CACHE_DIR)
    #[arg(long)]
    pub fresh: bool,
    /// After the checks, the reference board's load ladder on the same board (a pool of 3; 50 to 5,000
    /// members each asking every 10 s; a few minutes), and the whole performance page: in
    /// --format markdown or json, and in --report markdown=FILE / json=FILE. Each check is
    /// measured as its performance page is, 60 runs after 8 discarded, unless --iterations or --warmup
    /// say otherwise
    #[arg(long)]
    pub ladder: bool,
    /// With --ladder, also write the ladder's chart (p95 and late p95 against the offered rate,
    /// a line per page) to this SVG file; the Markdown page links it
    #[arg(long, value_name = "FILE", requires = "ladder")]
    pub chart: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What `check` and `demo` share.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectOpts,
    /// No progress on stderr, nor the warning about the role's rights (the JSON, JUnit, GitHub and
    /// Markdown reports carry it); other warnings and errors are still said
    #[arg(help_heading = "Output", short, long)]
    pub quiet: bool,
    /// Checks run side by side, each in a session of its own while it runs [default: the CPUs,
    /// at most 8, never more than the server's free connection slots; 1 with --migration]
    #[arg(help_heading = "Measurement", short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: Option<u16>,
    /// Open a new session for every check, never one an earlier check used (by default a
    /// session goes on to the next check when the last one left nothing in it that plancheck
    /// can see: no library, SQL-prepared statement, or custom setting the next does not set)
    #[arg(help_heading = "Measurement", long)]
    pub session_per_check: bool,
    /// Start no check after the first that fails the run (the checks running then finish); the
    /// rest are counted as not run
    #[arg(help_heading = "Selection", long)]
    pub fail_fast: bool,
    /// Do not settle usability on a scratch copy. By default, where the measured server's plans
    /// and re-plans leave open whether an index can serve a read path (and to confirm every
    /// not-usable), plancheck re-plans it on a schema-only copy on a throwaway local PostgreSQL
    /// of the same major version, the index alone on its table: catalog reads on the measured
    /// server, about a second for the copy (less when cached)
    #[arg(help_heading = "Verdicts", long)]
    pub no_scratch: bool,
    /// Also plan every check at production's statistics: FILE is what `plancheck stats export`
    /// wrote on production (or a replica). Each check is planned on the scratch copy with the
    /// file's sizes (as sparse files), column statistics and planner settings, and whether the
    /// index is chosen is then production's planner's answer, not the CI database's
    #[arg(help_heading = "Verdicts", long, value_name = "FILE")]
    pub stats: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub verdict: VerdictArgs,
    /// Discarded runs before measuring each check
    #[arg(
        help_heading = "Measurement",
        long,
        default_value_t = 2,
        value_name = "N"
    )]
    pub warmup: u32,
    /// Measured runs per check
    #[arg(help_heading = "Measurement", long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Longest a statement may run: 30s, 500ms, 2min
    #[arg(help_heading = "Safety", long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// Longest a statement may wait for a lock
    #[arg(help_heading = "Safety", long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub lock_timeout: Duration,
    /// Longest the check's transaction may sit idle
    #[arg(help_heading = "Safety", long = "idle-timeout", default_value = "60s", value_name = "DURATION", value_parser = parse_duration)]
    pub idle_in_transaction_timeout: Duration,
    /// Most temporary file space one statement may use (temp_file_limit), where the role may
    /// set it: 1GB, 256MB
    #[arg(help_heading = "Safety", long, default_value = "1GB", value_name = "SIZE", value_parser = parse_size_kb)]
    pub temp_file_limit: u64,
    /// Write each check's measurement (EXPLAIN documents, re-plans, catalog facts) into this
    /// folder, for `plancheck judge`
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub save_plans: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum StatsCommand {
    /// Read the planner's statistics of the database's tables (sizes, pg_stats, extended
    /// statistics, planner settings, B-tree heights, index end keys) into a JSON file, in one
    /// read-only transaction; the file holds real values of the columns (most common values,
    /// histogram bounds) unless --redact leaves them out
    Export(StatsExportArgs),
    /// Check a statistics file and say what it holds: its server, its age, its relations, the
    /// columns whose values it reveals or leaves out
    Show(StatsShowArgs),
}

#[derive(Debug, Args)]
pub struct StatsExportArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    /// Where to write the file (`-`: standard output); an existing file is replaced whole,
    /// never left half written
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Only this table, partitioned table or materialized view (`[SCHEMA.]NAME`, resolved by
    /// the role's search_path); repeat for more. Default: every one outside the system schemas
    #[arg(long = "table", value_name = "NAME")]
    pub tables: Vec<String>,
    /// Only the tables this project's read paths may read (each scope's SQL and setup, the SQL
    /// and PL/pgSQL functions they call, what their views read, every partition), with any
    /// --table
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Leave out the values of this column: `TABLE.COLUMN`, `SCHEMA.TABLE.COLUMN`, `TABLE.*`;
    /// repeat for more. Its numbers stay (null fraction, distinct count, width, correlation)
    #[arg(long, value_name = "TABLE.COLUMN")]
    pub redact: Vec<String>,
    #[command(flatten)]
    pub bounds: PlanBounds,
}

#[derive(Debug, Args)]
pub struct StatsShowArgs {
    /// The statistics file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum FixturesCommand {
    /// Load the reference board into a database (over a board already there only with --replace)
    Load(LoadArgs),
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub connect: ConnectOpts,
    /// Size of the board, as a fraction of the full one (1 = 2,343,847 posts)
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub scale: f64,
    /// Reload the board over one plancheck loaded before (never over tables it did not create)
    #[arg(long)]
    pub replace: bool,
}

/// An amount of memory or disk as PostgreSQL writes one (`1GB`, `256MB`, `64kB`; a bare number
/// is kB, as in `SET temp_file_limit = 1024`), in kB.
pub fn parse_size_kb(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (try 1GB, 256MB)"))?;
    let factor: u64 = match unit.trim() {
        "" | "kB" => 1,
        "MB" => 1024,
        "GB" => 1024 * 1024,
        "TB" => 1024 * 1024 * 1024,
        _ => return Err(format!("`{text}`: the unit is kB, MB, GB or TB")),
    };
    n.checked_mul(factor)
        .filter(|kb| (1..=i32::MAX as u64).contains(kb))
        .ok_or_else(|| format!("`{text}` is out of range (1kB to 2TB)"))
}

/// A duration as PostgreSQL writes one: a number and a unit (`ms`, `s`, `min`, `h`); a bare
/// number is milliseconds, as in `SET statement_timeout = 500`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (try 30s, 500ms, 2min)"))?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1000.0,
        "min" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        other => return Err(format!("unknown unit `{other}` (use ms, s, min or h)")),
    };
    if !(1.0..=86_400_000.0).contains(&ms) {
        return Err(format!("`{text}` is out of range (1ms to 24h)"));
    }
    Ok(Duration::from_millis(ms.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn the_flags_defaults_are_the_check_settings_defaults() {
        use clap::Parser;
        // `lint` runs with Settings::default(); `check` with these flags: one set of bounds.
        let cli = super::Cli::try_parse_from(["plancheck", "check"]).unwrap();
        let super::Command::Check(args) = cli.command else {
            panic!("not check")
        };
        let d = crate::db::check::Settings::default();
        assert_eq!(args.run.statement_timeout, d.statement_timeout);
        assert_eq!(args.run.lock_timeout, d.lock_timeout);
        assert_eq!(
            args.run.idle_in_transaction_timeout,
            d.idle_in_transaction_timeout
        );
        assert_eq!(
            (args.run.warmup, args.run.iterations),
            (d.warmup, d.iterations)
        );
    }

    #[test]
    fn verdict_defaults_are_the_flags_defaults() {
        use clap::Parser;
        let cli = super::Cli::try_parse_from(["plancheck", "check"]).unwrap();
        let super::Command::Check(args) = cli.command else {
            panic!("not check")
        };
        let (flags, d) = (args.run.verdict, super::VerdictArgs::default());
        assert_eq!(flags.format, d.format);
        assert_eq!(flags.require, d.require);
        assert_eq!(flags.large_rows, d.large_rows);
        assert_eq!(
            (flags.strict_plans, flags.explain, flags.report.len()),
            (d.strict_plans, d.explain, d.report.len())
        );
        assert_eq!(flags.color, d.color);
    }

    #[test]
    fn report_files_are_format_equals_file_and_repeat() {
        use super::{FormatArg, ReportFile, parse_report_file};
        use clap::Parser;
        assert_eq!(
            parse_report_file("junit=out/plancheck.xml"),
            Ok(ReportFile {
                format: FormatArg::Junit,
                path: "out/plancheck.xml".into()
            })
        );
        // A file name may hold `=`; the format is what comes before the first.
        assert_eq!(
            parse_report_file("markdown=a=b.md").map(|r| r.path),
            Ok("a=b.md".into())
        );
        assert!(parse_report_file("out.xml").is_err());
        assert!(
            parse_report_file("xml=out.xml")
                .unwrap_err()
                .contains("junit")
        );
        assert!(parse_report_file("junit=").is_err());
        let cli = super::Cli::try_parse_from([
            "plancheck",
            "judge",
            "dir",
            "--report",
            "junit=a.xml",
            "--report",
            "markdown=b.md",
            "--color",
            "never",
        ])
        .unwrap();
        let super::Command::Judge(args) = cli.command else {
            panic!("not judge")
        };
        assert_eq!(args.verdict.report.len(), 2);
        assert_eq!(args.verdict.color, super::ColorArg::Never);
    }

    #[test]
    fn the_migration_hold_is_30_s_and_only_with_a_migration() {
        use clap::Parser;
        let cli = super::Cli::try_parse_from(["plancheck", "check", "--migration", "m.sql"]);
        let Ok(super::Cli {
            command: super::Command::Check(args),
        }) = cli
        else {
            panic!("not check")
        };
        assert_eq!(args.migration_hold, Duration::from_secs(30));
        let alone = super::Cli::try_parse_from(["plancheck", "check", "--migration-hold", "5s"]);
        assert!(alone.is_err());
    }

    #[test]
    fn durations_read_as_postgresql_writes_them() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 weeks").is_err());
    }
}
