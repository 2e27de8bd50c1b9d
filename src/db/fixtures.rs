//! Loads the reference board (`fixtures/*.sql`, built into the binary) into a database:
//! schema, rows made by the server with set-based SQL, indexes after the load, `ANALYZE` at the
//! end. Progress goes to stderr, a line per step.
//!
//! The database may be a shared one, so the load never drops what it did not create: every
//! object it makes carries a comment starting with [`MARKER`], and before anything runs the
//! catalog is read for every name the board uses. A name held by an unmarked object refuses the
//! load; a board loaded before is replaced only when asked, dropped without CASCADE in one
//! transaction, so an object of the user's that depends on it keeps everything as it was.

use std::time::Instant;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::{Asked, Unanswered, cause};
use crate::error::DatabaseFailure;
use crate::project::Source;

/// How the load marks what it creates: the start of the comment on each of its tables and on its
/// function (`COMMENT ON TABLE posts IS 'plancheck reference board: posts'`, in schema.sql and
/// load.sql). Only an object whose comment starts with it is ever dropped.
pub const MARKER: &str = "plancheck reference board";

/// The board's tables, kept after a load, in an order they can be dropped in: a table before the
/// tables it references (posts → threads → forums, members).
const BOARD_TABLES: [&str; 5] = ["posts", "threads", "forums", "members", "board_params"];

/// Scratch tables the load creates and drops itself; a failed load leaves them behind.
const SCRATCH_TABLES: [&str; 2] = ["board_thread_plan", "board_fragments"];

/// Functions the load creates and drops itself.
const FUNCTIONS: [&str; 1] = ["board_hash"];

/// How long dropping an old board may wait for another session's lock. Waiting longer would hold
/// the locks already taken and queue every reader of the board behind the drop.
pub const DROP_LOCK_TIMEOUT: &str = "5s";

/// Why a load was refused or failed, as data: worded by `report::fixtures`
/// (`impl From<Problem> for Error`). A refusal changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// `--scale` out of (0, 1].
    BadScale(f64),
    /// A fixture file is not in this build.
    MissingFile(String),
    /// The load failed at this step: the server's words.
    StepFailed { label: String, cause: String },
    /// The search_path names no schema that exists.
    NoSchema,
    /// These names are held by objects plancheck did not mark.
    Taken(Vec<String>),
    /// A board is loaded already (at this scale, when readable) and `--replace` was not given.
    Loaded(Option<String>),
    /// `--replace` would drop these, which a user added to plancheck's tables.
    Additions(Vec<String>),
    /// Objects of the user's depend on the board: the server's DETAIL.
    Dependents(Option<String>),
    /// Another session holds a lock on the board (waited [`DROP_LOCK_TIMEOUT`]).
    DropLocked,
    /// The drop failed: the server's words.
    DropFailed(String),
    /// Committing the drop failed: the server's words.
    CommitFailed(String),
}

/// What a load tells as it goes (quiet with `-q`): worded by `report::fixtures`.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress<'a> {
    /// What was dropped to make room.
    Dropped(&'a [String]),
    /// Step `n` of `total` is starting.
    Step {
        scale: f64,
        n: usize,
        total: usize,
        label: &'a str,
    },
    /// The step took this many seconds.
    StepDone(f64),
    /// A step failed: end the line.
    StepFailed,
    /// The board is loaded at `scale`, in this many seconds.
    Loaded { scale: f64, secs: f64 },
}

fn tell(progress: Progress<'_>) {
    crate::report::fixtures::tell(&progress);
}

/// The files, in the order they run.
const FILES: [&str; 3] = [
    "fixtures/schema.sql",
    "fixtures/load.sql",
    "fixtures/indexes.sql",
];

/// One step of the load: a label for the progress line and the SQL batch.
struct Step {
    label: String,
    sql: String,
}

/// Splits a fixture file at its `-- step: LABEL` lines. Text before the first marker is a step
/// labelled by the file.
fn steps(file: &str, text: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".sql");
    let mut current = Step {
        label: stem.to_string(),
        sql: String::new(),
    };
    for line in text.lines() {
        if let Some(label) = line.trim().strip_prefix("-- step:") {
            if !current.sql.trim().is_empty() {
                out.push(current);
            }
            current = Step {
                label: label.trim().to_string(),
                sql: String::new(),
            };
        } else {
            current.sql.push_str(line);
            current.sql.push('\n');
        }
    }
    if !current.sql.trim().is_empty() {
        out.push(current);
    }
    out
}

/// Checks a scale given on the command line.
pub fn validate_scale(scale: f64) -> Result<f64, crate::error::Error> {
    if !scale.is_finite() || scale <= 0.0 || scale > 1.0 {
        return Err(Problem::BadScale(scale).into());
    }
    Ok(scale)
}

/// Loads the board at `scale` (1 = the full board) into a database that may hold anything: first
/// makes room (see [`make_room`]; a refusal is [`BadInput`] and changes nothing), then
/// [`load`]s. With `replace`, a board plancheck loaded before is dropped and loaded again.
/// Returns the seconds the load took.
pub async fn load_into(
    client: &Client,
    scale: f64,
    quiet: bool,
    replace: bool,
) -> crate::error::Result<f64> {
    let dropped = make_room(client, replace).await?;
    if !quiet && !dropped.is_empty() {
        tell(Progress::Dropped(&dropped));
    }
    load(client, scale, quiet).await
}

/// Loads the board at `scale` (1 = the full board). Returns the seconds it took. The files only
/// create: into a database where a name the board uses is taken, the load fails (before
/// anything is created when a table's name is taken). A database that may hold anything goes
/// through [`load_into`].
pub async fn load(client: &Client, scale: f64, quiet: bool) -> crate::error::Result<f64> {
    let started = Instant::now();
    let source = Source::Embedded;
    let mut all = Vec::new();
    for file in FILES {
        let text = source
            .read(file)
            .ok()
            .flatten()
            .ok_or_else(|| Problem::MissingFile(file.to_string()))?;
        all.extend(steps(file, &text));
    }
    client
        .batch_execute(&format!(
            "SET plancheck.scale = '{scale}'; SET statement_timeout = 0; \
             SET client_min_messages = warning"
        ))
        .await
        .map_err(|e| Unanswered::of(Asked::StartLoad, &e))?;
    let total = all.len();
    for (i, step) in all.iter().enumerate() {
        let t = Instant::now();
        if step.label == "analyze" {
            flush_statistics(client).await;
        }
        if !quiet {
            tell(Progress::Step {
                scale,
                n: i + 1,
                total,
                label: &step.label,
            });
        }
        client.batch_execute(&step.sql).await.map_err(|e| {
            if !quiet {
                tell(Progress::StepFailed);
            }
            Problem::StepFailed {
                label: step.label.clone(),
                cause: cause(&e),
            }
        })?;
        if !quiet {
            tell(Progress::StepDone(t.elapsed().as_secs_f64()));
        }
    }
    settle_statistics(client).await;
    let secs = started.elapsed().as_secs_f64();
    if !quiet {
        tell(Progress::Loaded { scale, secs });
    }
    Ok(secs)
}

/// From PostgreSQL 15 a session sends the rows it changed to the statistics at most once a
/// second, and an ANALYZE run before they are sent resets the count of changes only for the
/// server to add them afterwards: a tiny board, loaded in under a second, showed every row of
/// `posts` changed since its analyse, and each check noted it. Asks the session to send them
/// when this statement ends, before the ANALYZE. Best effort, as [`settle_statistics`].
async fn flush_statistics(client: &Client) {
    let version = client
        .query_one(
            "SELECT pg_catalog.current_setting('server_version_num')::int",
            &[],
        )
        .await
        .map(|row| row.get::<_, i32>(0))
        .unwrap_or(0);
    if version >= 150_000 {
        let _ = client
            .batch_execute("SELECT pg_catalog.pg_stat_force_next_flush()")
            .await;
    }
}

/// Before PostgreSQL 15 the statistics of a table reach `pg_stat_user_tables` asynchronously:
/// right after the load's ANALYZE they still show every row modified and no analyse, and a
/// check would warn that the board "changed a lot since it was last analysed". Waits (at most
/// ten seconds, polling) until they show the analyse. From 15 on they are there at once.
async fn settle_statistics(client: &Client) {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while Instant::now() < deadline {
        let settled = client
            .query_one(
                "SELECT pg_catalog.current_setting('server_version_num')::int >= 150000 \
                        OR coalesce(bool_and(coalesce(s.last_analyze, s.last_autoanalyze) \
                                             IS NOT NULL AND s.n_mod_since_analyze = 0), true) \
                 FROM pg_catalog.pg_stat_user_tables s \
                 WHERE s.relname OPERATOR(pg_catalog.=) ANY \
                       (ARRAY['members', 'forums', 'threads', 'posts'])",
                &[],
            )
            .await
            .map(|row| row.get::<_, bool>(0))
            .unwrap_or(true);
        if settled {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// An object in a schema of the search path that holds a name the board uses.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    /// A function (from `pg_proc`), not a relation (from `pg_class`).
    routine: bool,
    /// `relkind` of a relation, `prokind` of a function.
    kind: char,
    name: String,
    /// Schema-qualified and quoted by the server; a function's with its argument types.
    qualified: String,
    comment: Option<String>,
    oid: u32,
}

impl Found {
    /// Made by the load: the kind it creates (an ordinary table, a plain function) and the marker.
    fn is_ours(&self) -> bool {
        let kind = if self.routine { 'f' } else { 'r' };
        self.kind == kind
            && self
                .comment
                .as_deref()
                .is_some_and(|c| c.starts_with(MARKER))
    }

    /// `view public.posts`, for messages.
    fn describe(&self) -> String {
        format!("{} {}", kind_name(self.routine, self.kind), self.qualified)
    }
}

/// The word for a `relkind` (`routine` false) or a `prokind` (`routine` true).
fn kind_name(routine: bool, kind: char) -> &'static str {
    match (routine, kind) {
        (false, 'r') => "table",
        (false, 'p') => "partitioned table",
        (false, 'v') => "view",
        (false, 'm') => "materialized view",
        (false, 'f') => "foreign table",
        (false, 'S') => "sequence",
        (false, 'i' | 'I') => "index",
        (false, 'c') => "composite type",
        (false, _) => "relation",
        (true, 'p') => "procedure",
        (true, 'a') => "aggregate",
        (true, 'w') => "window function",
        (true, _) => "function",
    }
}

/// What the catalog says about loading here.
#[derive(Debug, PartialEq)]
enum Ground {
    /// Nothing in the way but plancheck's own objects, which these statements drop (none when
    /// every name is free).
    Clear(Vec<String>),
    /// Names the board uses held by objects plancheck did not mark, described.
    Taken(Vec<String>),
    /// A board is loaded and replacing it was not asked for; its `board_params`, if it has one.
    Loaded(Option<String>),
}

/// Decides from what holds the board's names whether the load may go ahead and what it drops
/// first. A board's leftover scratch objects (a failed load) are dropped without `replace`:
/// nothing else ever uses them.
fn survey(found: &[Found], replace: bool) -> Ground {
    let taken: Vec<String> = found
        .iter()
        .filter(|f| !f.is_ours())
        .map(Found::describe)
        .collect();
    if !taken.is_empty() {
        return Ground::Taken(taken);
    }
    let is_table = |f: &&Found, name: &str| !f.routine && f.name == name;
    let loaded = found
        .iter()
        .any(|f| BOARD_TABLES.iter().any(|name| is_table(&f, name)));
    if loaded && !replace {
        let params = found.iter().find(|f| is_table(f, "board_params"));
        return Ground::Loaded(params.map(|f| f.qualified.clone()));
    }
    // One statement per catalog, naming every object: the server drops a set whose members
    // depend only on each other, and its refusal lists every outside dependent at once.
    let tables: Vec<&str> = BOARD_TABLES
        .iter()
        .chain(&SCRATCH_TABLES)
        .flat_map(|name| found.iter().filter(move |f| is_table(f, name)))
        .map(|f| f.qualified.as_str())
        .collect();
    let functions: Vec<&str> = found
        .iter()
        .filter(|f| f.routine)
        .map(|f| f.qualified.as_str())
        .collect();
    let mut drops = Vec::new();
    if !tables.is_empty() {
        drops.push(format!("DROP TABLE {} RESTRICT", tables.join(", ")));
    }
    if !functions.is_empty() {
        drops.push(format!("DROP FUNCTION {} RESTRICT", functions.join(", ")));
    }
    Ground::Clear(drops)
}

/// Every object holding a name the board uses, in the schemas an unqualified name reaches
/// (the search path: where the files create and find what they name). Also fails when the
/// search path names no schema to create the board in.
async fn inventory(client: &Client) -> crate::error::Result<Vec<Found>> {
    let failed =
        |e: tokio_postgres::Error| DatabaseFailure::from(Unanswered::of(Asked::Catalog, &e));
    let schema: Option<String> = client
        .query_one("SELECT current_schema()::text", &[])
        .await
        .map_err(failed)?
        .get(0);
    if schema.is_none() {
        return Err(Problem::NoSchema.into());
    }
    let tables: Vec<&str> = BOARD_TABLES
        .iter()
        .chain(&SCRATCH_TABLES)
        .copied()
        .collect();
    let rows = client
        .query(
            "SELECT false, c.relkind::text, c.relname::text, \
                    format('%I.%I', n.nspname, c.relname), obj_description(c.oid, 'pg_class'), \
                    c.oid \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname::text = ANY($1::text[]) AND n.nspname = ANY(current_schemas(true)) \
             UNION ALL \
             SELECT true, p.prokind::text, p.proname::text, \
                    format('%I.%I(%s)', n.nspname, p.proname, \
                           pg_get_function_identity_arguments(p.oid)), \
                    obj_description(p.oid, 'pg_proc'), p.oid \
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE p.proname::text = ANY($2::text[]) AND n.nspname = ANY(current_schemas(true)) \
             ORDER BY 3, 4",
            &[&tables, &FUNCTIONS.as_slice()],
        )
        .await
        .map_err(failed)?;
    Ok(rows
        .iter()
        .map(|r| Found {
            routine: r.get(0),
            kind: r.get::<_, String>(1).chars().next().unwrap_or('?'),
            name: r.get(2),
            qualified: r.get(3),
            comment: r.get(4),
            oid: r.get(5),
        })
        .collect())
}

/// Makes room for a load, in one transaction: refuses (nothing changed) when a name the board
/// uses is held by an object plancheck did not mark, or by a board already loaded and `replace`
/// was not asked for; otherwise drops plancheck's own objects without CASCADE. Returns what it
/// dropped.
async fn make_room(client: &Client, replace: bool) -> crate::error::Result<Vec<String>> {
    client
        .batch_execute(&format!(
            "BEGIN; SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'"
        ))
        .await
        .map_err(|e| Unanswered::of(Asked::StartLoad, &e))?;
    let cleared = clear(client, replace).await;
    // A refusal or a failed drop rolls back: whatever was dropped before it is back.
    let end = if cleared.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = client.batch_execute(end).await;
    let dropped = cleared?;
    ended.map_err(|e| Problem::CommitFailed(cause(&e)))?;
    Ok(dropped)
}

/// The inside of [`make_room`]'s transaction.
async fn clear(client: &Client, replace: bool) -> crate::error::Result<Vec<String>> {
    let found = inventory(client).await?;
    match survey(&found, replace) {
        Ground::Taken(taken) => Err(Problem::Taken(taken).into()),
        Ground::Loaded(params) => {
            let scale = match params {
                Some(params) => board_scale(client, &params).await,
                None => None,
            };
            Err(Problem::Loaded(scale).into())
        }
        Ground::Clear(drops) => {
            let tables: Vec<u32> = found.iter().filter(|f| !f.routine).map(|f| f.oid).collect();
            let added = additions(client, &tables).await?;
            if !added.is_empty() {
                return Err(Problem::Additions(added).into());
            }
            for statement in &drops {
                client
                    .batch_execute(statement)
                    .await
                    .map_err(|e| drop_failure(&e))?;
            }
            Ok(found.iter().map(|f| f.qualified.clone()).collect())
        }
    }
}

/// What a user added to plancheck's tables: indexes the board does not define, triggers,
/// policies, rules. PostgreSQL drops them with their table, even without CASCADE, so they are
/// looked for before a drop.
async fn additions(client: &Client, tables: &[u32]) -> crate::error::Result<Vec<String>> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let text = Source::Embedded
        .read("fixtures/indexes.sql")
        .ok()
        .flatten()
        .ok_or_else(|| Problem::MissingFile("fixtures/indexes.sql".into()))?;
    let indexes = index_names(&text);
    // A primary key is the board's: every board table and scratch table has one, and a table
    // can have only one.
    let rows = client
        .query(
            "SELECT format('index %s on table %s', i.indexrelid::regclass, i.indrelid::regclass) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = ANY($1::oid[]) AND NOT i.indisprimary \
               AND c.relname::text <> ALL($2::text[]) \
             UNION ALL \
             SELECT format('trigger %I on table %s', t.tgname, t.tgrelid::regclass) \
             FROM pg_trigger t WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal \
             UNION ALL \
             SELECT format('policy %I on table %s', p.polname, p.polrelid::regclass) \
             FROM pg_policy p WHERE p.polrelid = ANY($1::oid[]) \
             UNION ALL \
             SELECT format('rule %I on table %s', r.rulename, r.ev_class::regclass) \
             FROM pg_rewrite r WHERE r.ev_class = ANY($1::oid[]) \
             ORDER BY 1",
            &[&tables, &indexes],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::Catalog, &e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The names of the indexes a fixture file creates (`CREATE [UNIQUE] INDEX name`).
fn index_names(sql: &str) -> Vec<String> {
    let code = crate::sql::significant(sql, crate::sql::Dialect::default());
    code.windows(3)
        .filter(|w| {
            w[1].keyword().as_deref() == Some("INDEX")
                && matches!(w[0].keyword().as_deref(), Some("CREATE" | "UNIQUE"))
        })
        .filter_map(|w| w[2].identifier())
        .collect()
}

/// The scale a loaded board was generated at, from its `board_params`; `None` when unreadable
/// (a failed load left it empty, or the role may not read it).
async fn board_scale(client: &Client, board_params: &str) -> Option<String> {
    // `board_params` is an identifier the server quoted (format('%I.%I')), not text from a file.
    let sql = format!("SELECT scale::text FROM {board_params} LIMIT 1");
    let row = client.query_opt(&sql, &[]).await.ok()??;
    row.try_get(0).ok()
}

/// The counts of a reference board, as its `board_params` records them: the first rows of a
/// performance page's setup table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BoardFacts {
    pub scale: f64,
    pub posts: i64,
    pub threads: i64,
    pub longest_thread: i64,
    pub deleted_posts: i64,
    pub unapproved_posts: i64,
}

/// The reference board's counts, when the database holds one plancheck loaded (its
/// `board_params` in `public`, marked by the board's comment); `None` otherwise, or when it
/// cannot be read: a database of the user's own has no such table, and its page says nothing of
/// one.
pub async fn board_facts(client: &Client) -> Option<BoardFacts> {
    let sql = format!(
        "SELECT scale::float8, posts, threads, longest_thread, deleted_posts, unapproved_posts \
           FROM public.board_params \
          WHERE obj_description('public.board_params'::regclass, 'pg_class') LIKE '{MARKER}%' \
          LIMIT 1"
    );
    let row = client.query_opt(&sql, &[]).await.ok()??;
    Some(BoardFacts {
        scale: row.try_get(0).ok()?,
        posts: row.try_get(1).ok()?,
        threads: row.try_get(2).ok()?,
        longest_thread: row.try_get(3).ok()?,
        deleted_posts: row.try_get(4).ok()?,
        unapproved_posts: row.try_get(5).ok()?,
    })
}

/// A failed drop of plancheck's own objects, the transaction about to be rolled back. Objects of
/// the user's that depend on the board are bad input, named from the server's DETAIL (every
/// dependent outside the dropped set, one a line).
fn drop_failure(e: &tokio_postgres::Error) -> crate::error::Error {
    match e.as_db_error() {
        Some(db) if *db.code() == SqlState::DEPENDENT_OBJECTS_STILL_EXIST => {
            Problem::Dependents(db.detail().map(str::to_string))
        }
        Some(db) if *db.code() == SqlState::LOCK_NOT_AVAILABLE => Problem::DropLocked,
        _ => Problem::DropFailed(cause(e)),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_split_at_markers() {
        let s = steps(
            "fixtures/load.sql",
            "set x = 1;\n-- step: members\ninsert a;\n-- step: posts\ninsert b;\n",
        );
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["load", "members", "posts"]);
        assert_eq!(s[2].sql.trim(), "insert b;");
    }

    fn table(name: &str, kind: char, comment: Option<&str>) -> Found {
        Found {
            routine: false,
            kind,
            name: name.to_string(),
            qualified: format!("public.{name}"),
            comment: comment.map(str::to_string),
            oid: 1,
        }
    }

    fn ours(name: &str) -> Found {
        table(name, 'r', Some("plancheck reference board: x"))
    }

    fn hash_function(comment: Option<&str>) -> Found {
        Found {
            routine: true,
            kind: 'f',
            name: "board_hash".to_string(),
            qualified: "public.board_hash(bigint, integer)".to_string(),
            comment: comment.map(str::to_string),
            oid: 2,
        }
    }

    /// The embedded SQL with `--` comments removed and whitespace collapsed (the files have no
    /// `--` inside a literal).
    fn embedded_code() -> Vec<(&'static str, String)> {
        FILES
            .iter()
            .map(|file| {
                let text = Source::Embedded.read(file).unwrap().unwrap();
                let code: Vec<&str> = text
                    .lines()
                    .map(|l| l.split("--").next().unwrap_or(""))
                    .collect();
                (
                    *file,
                    code.join(" ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            })
            .collect()
    }

    #[test]
    fn free_names_need_no_drop() {
        assert_eq!(survey(&[], false), Ground::Clear(vec![]));
        assert_eq!(survey(&[], true), Ground::Clear(vec![]));
    }

    // Regression: the load dropped a user's `posts` table with CASCADE, its view and FK with it.
    #[test]
    fn an_unmarked_object_of_any_kind_refuses_even_with_replace() {
        let found = [
            ours("threads"),
            table("posts", 'r', None),
            table("board_fragments", 'v', Some("plancheck reference board: x")),
            table("members", 'r', Some("members of the real forum")),
            hash_function(Some("mine")),
        ];
        let Ground::Taken(taken) = survey(&found, true) else {
            panic!("not refused")
        };
        assert_eq!(
            taken,
            [
                "table public.posts",
                "view public.board_fragments",
                "table public.members",
                "function public.board_hash(bigint, integer)"
            ]
        );
    }

    #[test]
    fn a_loaded_board_needs_replace() {
        let found = [ours("board_params"), ours("posts")];
        assert_eq!(
            survey(&found, false),
            Ground::Loaded(Some("public.board_params".to_string()))
        );
        assert_eq!(survey(&[ours("posts")], false), Ground::Loaded(None));
    }

    #[test]
    fn replace_drops_tables_before_those_they_reference_without_cascade() {
        let found = [
            ours("board_fragments"),
            ours("board_params"),
            ours("forums"),
            hash_function(Some("plancheck reference board: hash")),
            ours("members"),
            ours("posts"),
            ours("threads"),
        ];
        assert_eq!(
            survey(&found, true),
            Ground::Clear(vec![
                "DROP TABLE public.posts, public.threads, public.forums, public.members, \
                 public.board_params, public.board_fragments RESTRICT"
                    .to_string(),
                "DROP FUNCTION public.board_hash(bigint, integer) RESTRICT".to_string(),
            ])
        );
    }

    #[test]
    fn the_leftovers_of_a_failed_load_are_dropped_without_replace() {
        let found = [
            ours("board_thread_plan"),
            hash_function(Some("plancheck reference board: hash")),
        ];
        assert_eq!(
            survey(&found, false),
            Ground::Clear(vec![
                "DROP TABLE public.board_thread_plan RESTRICT".to_string(),
                "DROP FUNCTION public.board_hash(bigint, integer) RESTRICT".to_string(),
            ])
        );
    }

    #[test]
    fn the_boards_own_indexes_are_read_from_its_file() {
        let text = Source::Embedded
            .read("fixtures/indexes.sql")
            .unwrap()
            .unwrap();
        let names = index_names(&text);
        assert_eq!(names.len(), 8, "{names:?}");
        assert!(names.contains(&"posts_thread_visible_idx".to_string()));
        assert!(names.contains(&"posts_body_search_idx".to_string()));
        assert_eq!(
            index_names("create unique index a_idx on t (x); -- CREATE INDEX b_idx\n"),
            ["a_idx"]
        );
    }

    #[test]
    fn kinds_are_named_as_the_user_knows_them() {
        assert_eq!(kind_name(false, 'f'), "foreign table");
        assert_eq!(kind_name(false, 'm'), "materialized view");
        assert_eq!(kind_name(true, 'p'), "procedure");
        assert_eq!(kind_name(true, 'f'), "function");
    }

    #[test]
    fn everything_the_files_create_is_marked() {
        let code = embedded_code();
        let all: String = code
            .iter()
            .map(|(_, c)| c.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut created = Vec::new();
        for lead in [
            "CREATE TABLE ",
            "CREATE UNLOGGED TABLE ",
            "CREATE FUNCTION ",
        ] {
            for (_, rest) in all
                .match_indices(lead)
                .map(|(i, _)| all.split_at(i + lead.len()))
            {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                created.push(name);
            }
        }
        created.sort();
        let mut expected: Vec<String> = BOARD_TABLES
            .iter()
            .chain(&SCRATCH_TABLES)
            .chain(&FUNCTIONS)
            .map(|n| n.to_string())
            .collect();
        expected.sort();
        assert_eq!(
            created, expected,
            "the files create what the guard knows of"
        );
        for name in BOARD_TABLES.iter().chain(&SCRATCH_TABLES) {
            let comment = format!("COMMENT ON TABLE {name} IS '{MARKER}");
            assert!(all.contains(&comment), "no `{comment}`");
        }
        let comment = format!("COMMENT ON FUNCTION board_hash(bigint, integer) IS '{MARKER}");
        assert!(all.contains(&comment), "no `{comment}`");
    }

    // Regression: schema.sql dropped whatever held the board's names, with CASCADE.
    #[test]
    fn the_files_drop_only_what_the_same_load_created() {
        for (file, code) in embedded_code() {
            let upper = code.to_uppercase();
            assert!(!upper.contains("CASCADE"), "{file} cascades");
            assert!(!upper.contains("OR REPLACE"), "{file} replaces");
            assert!(
                !upper.contains("IF EXISTS"),
                "{file} drops what may not be its own"
            );
        }
        // The only drops: load.sql's cleanup step, of the scratch objects that load created.
        let text = Source::Embedded.read("fixtures/load.sql").unwrap().unwrap();
        for step in steps("fixtures/load.sql", &text) {
            let drops = step.sql.to_uppercase().matches("DROP ").count();
            let expected = if step.label == "cleanup" { 3 } else { 0 };
            assert_eq!(drops, expected, "step `{}`", step.label);
        }
        for file in ["fixtures/schema.sql", "fixtures/indexes.sql"] {
            let text = Source::Embedded.read(file).unwrap().unwrap();
            let code: String = text
                .lines()
                .map(|l| l.split("--").next().unwrap_or(""))
                .collect();
            assert!(!code.to_uppercase().contains("DROP "), "{file} drops");
        }
    }

    #[test]
    fn scale_out_of_range_is_bad_input() {
        assert!(validate_scale(0.0).is_err());
        assert!(validate_scale(-1.0).is_err());
        assert!(validate_scale(f64::NAN).is_err());
        assert!(validate_scale(1.5).is_err());
        assert_eq!(validate_scale(0.05).unwrap(), 0.05);
    }
}
