//! Which logged statements are read paths, and for each one: its shape (the text with every
//! literal set aside, so the thousand executions of one statement group as one), the literals
//! in it with the column each is compared with, and a name saying what it reads.
//!
//! Pure functions over the text, read with the crate's lexer ([`crate::sql`]). This is not a
//! parser: a walk over the tokens that knows brackets, clause keywords (`FROM`, `WHERE`, `ORDER
//! BY`, …) and a few comparison forms. That is enough to group statements, name them and spot
//! the ones plancheck must not plan; whatever it cannot read it leaves out, and no input makes
//! it panic.

use crate::sql::{self, Dialect, Kind, Token, TokenKind};

/// Why a logged statement is not a read path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Only whitespace and comments.
    Empty,
    /// More than one statement in the text.
    Several,
    /// Not a query: its first keyword (`INSERT`, `SET`, `BEGIN`, `EXPLAIN`, …), or `SELECT
    /// INTO` (it creates a table).
    NotRead(String),
    /// A `WITH` holding `INSERT`/`UPDATE`/`DELETE`/`MERGE`.
    Writes,
    /// `FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`: PostgreSQL refuses them
    /// in the read-only transaction plancheck plans in.
    Locks,
    /// Reads no table: `SELECT 1`, `SELECT set_config(…)`, `SELECT count(*) FROM
    /// generate_series(1, 3)`.
    NoTable,
    /// Reads `pg_catalog.*`, `information_schema.*` or a `pg_*` relation (a driver's or a
    /// monitoring tool's query, not the application's).
    Catalog,
}

impl Skip {
    /// A short text for a summary: "not a read (INSERT)", "catalog query", ….
    pub fn reason(&self) -> String {
        match self {
            Skip::Empty => "empty statement".into(),
            Skip::Several => "several statements".into(),
            Skip::NotRead(word) => format!("not a read ({word})"),
            Skip::Writes => "writes (data-modifying WITH)".into(),
            Skip::Locks => "locks rows (FOR UPDATE/SHARE)".into(),
            Skip::NoTable => "reads no table".into(),
            Skip::Catalog => "catalog query".into(),
        }
    }
}

/// Ok(()) when `text` is one read statement worth planning: one statement (comments, a
/// trailing `;` and a leading `(` are fine), a query, writing nothing, locking nothing, reading
/// at least one table and no catalog relation.
pub fn read_path(text: &str) -> Result<(), Skip> {
    let statements = sql::split(text, Dialect::default());
    let statement = match statements.as_slice() {
        [] => return Err(Skip::Empty),
        [one] => one,
        _ => return Err(Skip::Several),
    };
    match sql::classify(statement.text, statement.dialect) {
        Kind::Query => {}
        Kind::TransactionControl(words) => return Err(Skip::NotRead(words)),
        Kind::Set { .. } => return Err(Skip::NotRead("SET".into())),
        Kind::Reset { .. } => return Err(Skip::NotRead("RESET".into())),
        Kind::Other(word) if word.is_empty() => {
            let first = sql::significant(statement.text, statement.dialect);
            let first = first.first().map_or("", |t| t.text);
            return Err(Skip::NotRead(short(first)));
        }
        Kind::Other(word) => return Err(Skip::NotRead(short(&word))),
    }
    let r = Reading::new(statement.text);
    // psql's splitter does not cut inside parentheses; the server would refuse `(…; …)` anyway.
    if r.toks.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return Err(Skip::Several);
    }
    if r.writes() {
        return Err(Skip::Writes);
    }
    // In a query, INTO only appears in `SELECT … INTO new_table`, which creates the table.
    if r.upper.iter().any(|k| k == "INTO") {
        return Err(Skip::NotRead("SELECT INTO".into()));
    }
    if r.locks() {
        return Err(Skip::Locks);
    }
    let relations = r.relations();
    if relations.iter().any(|parts| catalog(parts)) {
        return Err(Skip::Catalog);
    }
    if relations.is_empty() {
        return Err(Skip::NoTable);
    }
    Ok(())
}

/// A word for a skip reason, cut short: the text may be anything.
fn short(word: &str) -> String {
    word.chars().take(32).collect()
}

/// Whether a relation (its name parts, folded) is a system catalog or view.
fn catalog(parts: &[String]) -> bool {
    match parts {
        [name] => name.starts_with("pg_"),
        [.., schema, _] => matches!(
            schema.as_str(),
            "pg_catalog" | "information_schema" | "pg_toast"
        ),
        [] => false,
    }
}

/// A statement with its literals set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The statement with every literal and `$n` set aside, for grouping: its significant
    /// tokens (no comments, no trailing `;`), each String, BitString, Number and Param — and a
    /// number's sign where it can only be one (`= -5`) — replaced by `?`. Keywords (reserved
    /// ones and a few clause words) are upper-cased; other words, and quoted identifiers that
    /// need no quotes, are written as folded identifiers (`"posts"` and `Posts` are `posts`). A
    /// bracketed list after `IN` or `ARRAY` holding only literals becomes `(?…)` / `[?…]` (with
    /// the items' common cast kept: `(? ::text…)`), so an ORM's lists of varying length are one
    /// shape. A cast keeps its type: `'{1}'::int[]` is `? ::int[]`, `::varchar(255)` keeps its
    /// modifier. Tokens are joined by one space, except that none is written before `.` `,`
    /// `)` `[` `]`, after `.` `(` `[` `::`, or between a function name and its `(`:
    /// `SELECT posts.* FROM posts WHERE thread_id IN (?…) LIMIT ?`.
    pub key: String,
    /// Every literal and `$n`, in text order (a cast's type modifier, `varchar(255)`, is part
    /// of the type, not a literal).
    pub literals: Vec<Literal>,
}

/// One literal or parameter of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// Byte offset in the text where it starts (at its `-` for a negative number).
    pub start: usize,
    /// Byte offset just past it (a cast after it is not included).
    pub end: usize,
    pub value: LiteralValue,
    /// The column it is compared with, unqualified and folded: `p.visibility = 'visible'`,
    /// `'visible' = visibility`, `<>`, `!=`, `<`, `<=`, `>`, `>=`, `[NOT] LIKE`/`ILIKE`, `IS
    /// [NOT] DISTINCT FROM`, each item of `IN (…)`, `= ANY(…)` (also `ANY(ARRAY[…])`), either
    /// bound of `BETWEEN`, a cast on either side (`status::text = 'x'`, `visibility =
    /// 'visible'::post_visibility`), a typed literal (`created_at > DATE '2024-01-01'`) and a
    /// one-column function (`lower(email) = $1` gives "email"). None otherwise (`LIMIT 20`,
    /// `OFFSET`, function arguments, arithmetic).
    pub column: Option<String>,
}

/// What a literal holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiteralValue {
    /// A string literal's decoded value.
    Text(String),
    /// A number as written (with its `-` when negative).
    Number(String),
    /// `$n`.
    Param(usize),
    /// Anything else as written: a bit string, a string that cannot be decoded exactly
    /// (unterminated, a `U&'…'` escape), a parameter number too large.
    Other(String),
}

/// The shape of a statement: its grouping key and its literals.
pub fn shape(text: &str) -> Shape {
    let (key, found) = Reading::new(text).walk();
    Shape {
        key,
        literals: found.into_iter().map(|(literal, _)| literal).collect(),
    }
}

/// The relations the statement reads, from its FROM and JOIN clauses (subqueries and CTE
/// bodies included; CTE names are not relations, nor is a function in FROM): as written,
/// folded, schema kept when given (`["public.posts", "threads"]`), each once, in text order.
/// Good enough to name a path and to spot catalog queries; not a full parser.
pub fn relations(text: &str) -> Vec<String> {
    Reading::new(text)
        .relations()
        .into_iter()
        .map(|parts| parts.join("."))
        .collect()
}

/// The longest name [`name`] gives.
const MAX_NAME: usize = 60;

/// A name for the read path saying what it reads, lower-case letters, digits and `-`:
///
/// 1. the first relation the outermost query reads ([`relations`] in the fewest brackets),
///    unqualified; "query" when there is none;
/// 2. then, when any, `-by-` and the columns compared with a literal or `$n` (see
///    [`Literal::column`]) inside a `WHERE` or a `JOIN … ON` at any depth (subqueries and CTE
///    bodies included, from any alias), in text order, each once, at most 3;
/// 3. then the first column of the outermost `ORDER BY` (not one inside a function call or a
///    window) when it is not already named, after `-by-` when step 2 named none.
///
/// Each part is lower-cased and every run of characters outside `[a-z0-9]` becomes one `-`
/// (`app_post` → `app-post`). A name over 60 characters is cut back to its last whole part.
/// `SELECT … FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' ORDER BY
/// p.created_at LIMIT 20` is `posts-by-thread-id-visibility-created-at`; `SELECT * FROM threads
/// ORDER BY last_post_at DESC` is `threads-by-last-post-at`.
pub fn name(text: &str) -> String {
    let r = Reading::new(text);
    // The outermost query's first relation: `SELECT (SELECT count(*) FROM posts …) FROM
    // members m WHERE m.id = $1` reads members.
    let relations = r.relations_by_depth();
    let outermost = relations.iter().map(|(_, depth)| *depth).min();
    let base = relations
        .iter()
        .find(|(_, depth)| Some(*depth) == outermost)
        .and_then(|(parts, _)| parts.last())
        .map(|relation| slug(relation))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "query".into());
    let mut columns: Vec<String> = Vec::new();
    for (literal, clause) in r.walk().1 {
        let Some(column) = literal.column else {
            continue;
        };
        let column = slug(&column);
        if matches!(clause, Clause::Where | Clause::On)
            && !column.is_empty()
            && !columns.contains(&column)
            && columns.len() < 3
        {
            columns.push(column);
        }
    }
    if let Some(order) = r.order_column().map(|c| slug(&c))
        && !order.is_empty()
        && !columns.contains(&order)
    {
        columns.push(order);
    }
    let mut out = base;
    if !columns.is_empty() {
        out.push_str("-by-");
        out.push_str(&columns.join("-"));
    }
    shorten(out)
}

/// Lower-case `[a-z0-9]` runs joined by single `-`s.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// A name cut back to [`MAX_NAME`] at a `-` (it is all ASCII: [`slug`]s and `-by-`).
fn shorten(mut name: String) -> String {
    if name.len() > MAX_NAME {
        let cut = match name.as_bytes().get(MAX_NAME) {
            Some(b'-') => MAX_NAME,
            _ => name
                .get(..MAX_NAME)
                .and_then(|s| s.rfind('-'))
                .unwrap_or(MAX_NAME),
        };
        name.truncate(cut);
        if let Some(stem) = name.strip_suffix("-by") {
            name = stem.to_string();
        }
    }
    if name.is_empty() {
        "query".into()
    } else {
        name
    }
}

/// Words that tell two statements apart in a name, none of them said by every query.
const PLAIN_WORDS: &[&str] = &[
    "and", "as", "asc", "by", "desc", "false", "from", "in", "is", "not", "null", "on", "or",
    "order", "select", "true", "where",
];

/// What may tell read path `text` (of shape `key`) apart, in a name, from `other`, the statement
/// of the read path that has its name already: the values compared with a partial index's
/// predicate columns that split its shape (`visible`), then the words it says that `other` does
/// not (`offset`, `count`, `author-id`), first seen first. Each a [`slug`]; none when only
/// literals tell them apart.
pub fn distinctions(key: &str, text: &str, other: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |word: String| {
        if !word.is_empty() && !out.contains(&word) {
            out.push(word);
        }
    };
    // The literals that split a shape: the key's lines after its first, `column = value`.
    for line in key.lines().skip(1) {
        if let Some((_, value)) = line.split_once(" = ")
            && !other.contains(value)
        {
            add(slug(value.trim_matches('\'')));
        }
    }
    let words = |sql: &str| -> Vec<String> {
        sql::significant(sql, Dialect::default())
            .iter()
            .filter_map(|t| t.identifier())
            .map(|w| slug(&w))
            .filter(|w| !w.is_empty() && !PLAIN_WORDS.contains(&w.as_str()))
            .collect()
    };
    if other.is_empty() {
        // Nothing to compare with: any word would do, so none is chosen.
        return out;
    }
    let theirs = words(other);
    for word in words(text) {
        if !theirs.contains(&word) {
            add(word);
        }
    }
    out
}

/// `base` and a distinction, cut back to [`MAX_NAME`] as a name is.
pub fn distinguished(base: &str, distinction: &str) -> String {
    shorten(format!("{base}-{distinction}"))
}

/// A stable 6-hex-digit tag for a shape key and the values that split it, to tell apart read
/// paths whose names clash, the same way on every run and machine: FNV-1a 64 (std's
/// `HashMap` hasher is seeded per process), its top 24 bits. Each extra value is preceded by
/// a 0xff byte, which UTF-8 text never holds, so `("a", ["b"])` and `("ab", [])` differ.
pub fn tag(key: &str, extra: &[&str]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    };
    eat(key.as_bytes());
    for value in extra {
        eat(&[0xff]);
        eat(value.as_bytes());
    }
    format!("{:06x}", hash >> 40)
}

/// PostgreSQL's reserved keywords (including those allowed as function or type names): never
/// a bare column or table name. Sorted, for binary search.
const RESERVED: &[&str] = &[
    "ALL",
    "ANALYSE",
    "ANALYZE",
    "AND",
    "ANY",
    "ARRAY",
    "AS",
    "ASC",
    "ASYMMETRIC",
    "AUTHORIZATION",
    "BINARY",
    "BOTH",
    "CASE",
    "CAST",
    "CHECK",
    "COLLATE",
    "COLLATION",
    "COLUMN",
    "CONCURRENTLY",
    "CONSTRAINT",
    "CREATE",
    "CROSS",
    "CURRENT_CATALOG",
    "CURRENT_DATE",
    "CURRENT_ROLE",
    "CURRENT_SCHEMA",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "DEFAULT",
    "DEFERRABLE",
    "DESC",
    "DISTINCT",
    "DO",
    "ELSE",
    "END",
    "EXCEPT",
    "FALSE",
    "FETCH",
    "FOR",
    "FOREIGN",
    "FREEZE",
    "FROM",
    "FULL",
    "GRANT",
    "GROUP",
    "HAVING",
    "ILIKE",
    "IN",
    "INITIALLY",
    "INNER",
    "INTERSECT",
    "INTO",
    "IS",
    "ISNULL",
    "JOIN",
    "LATERAL",
    "LEADING",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "NATURAL",
    "NOT",
    "NOTNULL",
    "NULL",
    "OFFSET",
    "ON",
    "ONLY",
    "OR",
    "ORDER",
    "OUTER",
    "OVERLAPS",
    "PLACING",
    "PRIMARY",
    "REFERENCES",
    "RETURNING",
    "RIGHT",
    "SELECT",
    "SESSION_USER",
    "SIMILAR",
    "SOME",
    "SYMMETRIC",
    "SYSTEM_USER",
    "TABLE",
    "TABLESAMPLE",
    "THEN",
    "TO",
    "TRAILING",
    "TRUE",
    "UNION",
    "UNIQUE",
    "USER",
    "USING",
    "VARIADIC",
    "VERBOSE",
    "WHEN",
    "WHERE",
    "WINDOW",
    "WITH",
];

/// Unreserved words that are upper-cased in a key as well, for reading: clause words a reader
/// expects as keywords. Sorted.
const CLAUSE_WORDS: &[&str] = &[
    "BETWEEN",
    "BY",
    "DELETE",
    "EXISTS",
    "FILTER",
    "FIRST",
    "FOLLOWING",
    "INSERT",
    "INTERVAL",
    "LAST",
    "LOCKED",
    "MATERIALIZED",
    "MERGE",
    "NOWAIT",
    "NULLS",
    "ORDINALITY",
    "OVER",
    "PARTITION",
    "PRECEDING",
    "RECURSIVE",
    "ROWS",
    "SHARE",
    "SKIP",
    "UNBOUNDED",
    "UPDATE",
    "VALUES",
    "WITHIN",
];

/// Type names that may prefix a string literal: `DATE '2024-01-01'`.
const TYPED: &[&str] = &["DATE", "INTERVAL", "TIME", "TIMESTAMP", "TIMESTAMPTZ"];

/// Words after which a `-` can only be a sign: `WHERE -5 < x`, `LIMIT -1`.
const OPERAND_NEXT: &[&str] = &[
    "AND",
    "BETWEEN",
    "ELSE",
    "HAVING",
    "ILIKE",
    "LIKE",
    "LIMIT",
    "NOT",
    "OFFSET",
    "ON",
    "OR",
    "RETURNING",
    "SELECT",
    "THEN",
    "WHEN",
    "WHERE",
];

/// The operators that compare a column with a value.
const COMPARISONS: &[&str] = &["=", "<>", "!=", "<", ">", "<=", ">="];

fn reserved(upper: &str) -> bool {
    RESERVED.binary_search(&upper).is_ok()
}

/// Whether a word is written upper-case in a key.
fn shown_as_keyword(upper: &str) -> bool {
    reserved(upper) || CLAUSE_WORDS.binary_search(&upper).is_ok()
}

/// The clause a token belongs to, in the innermost query around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clause {
    Select,
    /// FROM and JOIN items.
    From,
    /// A join's `ON` or `USING`.
    On,
    Where,
    Group,
    Having,
    Order,
    /// LIMIT, OFFSET, FETCH.
    Limit,
    Other,
}

/// One level of brackets while reading: the bracket that opened it and the clause in force.
struct Level {
    open: Option<usize>,
    /// The clause around the bracket, in force inside until a clause keyword here changes it
    /// (`IN (1, 2)` stays in the WHERE; `(SELECT … FROM` starts its own).
    outer: Clause,
    /// The clause a keyword at this level set.
    own: Option<Clause>,
    /// Whether a SELECT (or VALUES, DELETE) began at this level: only then is a FROM here a
    /// FROM clause and not `extract(year FROM x)` or `substring(s FROM 2)`.
    query: bool,
}

impl Level {
    fn clause(&self) -> Clause {
        self.own.unwrap_or(self.outer)
    }
}

/// Where a literal sits: `first..end` covers it with its sign and any casts after it; `lit` is
/// the literal token itself.
struct Unit {
    first: usize,
    lit: usize,
    end: usize,
}

/// A statement's significant tokens with what the walks ask of them, worked out once.
struct Reading<'a> {
    toks: Vec<Token<'a>>,
    /// Each Word upper-cased; "" for other tokens.
    upper: Vec<String>,
    /// The bracket each token sits directly in.
    parent: Vec<Option<usize>>,
    /// For an opening bracket, its closing one; for a closing one, its opening one.
    mate: Vec<Option<usize>>,
    /// How many brackets are around each token.
    depth: Vec<usize>,
    clause: Vec<Clause>,
    /// The clause set at the token's own bracket level (None when inherited from outside).
    own: Vec<Option<Clause>>,
    /// For a `::`, the index just past the type after it.
    cast_end: Vec<Option<usize>>,
    /// Whether the token is a `::` or part of the type after one.
    cast: Vec<bool>,
}

impl<'a> Reading<'a> {
    fn new(text: &'a str) -> Self {
        let mut toks = sql::significant(text, Dialect::default());
        while toks.last().is_some_and(|t| t.kind == TokenKind::Semicolon) {
            toks.pop();
        }
        let n = toks.len();
        let upper = toks
            .iter()
            .map(|t| t.keyword().unwrap_or_default())
            .collect();
        let mut r = Reading {
            toks,
            upper,
            parent: vec![None; n],
            mate: vec![None; n],
            depth: vec![0; n],
            clause: vec![Clause::Other; n],
            own: vec![None; n],
            cast_end: vec![None; n],
            cast: vec![false; n],
        };
        r.nest();
        r.casts();
        r
    }

    /// The upper-cased word at `i`, "" when it is not a word or out of range.
    fn kw(&self, i: usize) -> &str {
        self.upper.get(i).map_or("", String::as_str)
    }

    /// The word `back` tokens before `i`, "" when there is none.
    fn kw_back(&self, i: usize, back: usize) -> &str {
        i.checked_sub(back).map_or("", |j| self.kw(j))
    }

    /// The punctuation at `i`, "" for other tokens.
    fn punct(&self, i: usize) -> &str {
        match self.toks.get(i) {
            Some(t) if t.kind == TokenKind::Punct => t.text,
            _ => "",
        }
    }

    /// The operator at `i`, "" for other tokens.
    fn op(&self, i: usize) -> &str {
        match self.toks.get(i) {
            Some(t) if t.kind == TokenKind::Operator => t.text,
            _ => "",
        }
    }

    fn kind(&self, i: usize) -> Option<TokenKind> {
        self.toks.get(i).map(|t| t.kind)
    }

    /// The identifier at `i` (a word that is not a reserved keyword, or a quoted name),
    /// folded.
    fn ident(&self, i: usize) -> Option<String> {
        let t = self.toks.get(i)?;
        match t.kind {
            TokenKind::Word if !reserved(self.kw(i)) => t.identifier(),
            TokenKind::QuotedIdent => t.identifier(),
            _ => None,
        }
    }

    fn is_ident(&self, i: usize) -> bool {
        self.ident(i).is_some()
    }

    fn mate(&self, i: usize) -> Option<usize> {
        self.mate.get(i).copied().flatten()
    }

    /// Brackets, depths and clauses, in one pass.
    fn nest(&mut self) {
        let mut stack = vec![Level {
            open: None,
            outer: Clause::Other,
            own: None,
            query: false,
        }];
        for i in 0..self.toks.len() {
            let p = self.punct(i);
            let opens = matches!(p, "(" | "[");
            let closer = match p {
                ")" => Some("("),
                "]" => Some("["),
                _ => None,
            };
            if let Some(opener) = closer
                && stack.len() > 1
                && let Some(o) = stack.last().and_then(|l| l.open)
                && self.punct(o) == opener
            {
                stack.pop();
                self.mate[o] = Some(i);
                self.mate[i] = Some(o);
            }
            let Some(level) = stack.last_mut() else {
                return;
            };
            if !opens && let Some(c) = self.clause_change(i, level) {
                level.own = Some(c);
            }
            self.parent[i] = level.open;
            self.clause[i] = level.clause();
            self.own[i] = level.own;
            self.depth[i] = stack.len() - 1;
            if opens {
                let outer = self.clause[i];
                stack.push(Level {
                    open: Some(i),
                    outer,
                    own: None,
                    query: false,
                });
            }
        }
    }

    /// The clause the keyword at `i` starts at its level, if it starts one.
    fn clause_change(&self, i: usize, level: &mut Level) -> Option<Clause> {
        let prev = self.kw_back(i, 1);
        let joined = matches!(level.own, Some(Clause::From | Clause::On));
        // `count(*) FILTER (WHERE …)` filters an aggregate, not the rows read.
        let in_filter = level.open.is_some_and(|o| self.kw_back(o, 1) == "FILTER");
        let change = match self.kw(i) {
            "SELECT" | "VALUES" | "DELETE" => {
                level.query = true;
                Clause::Select
            }
            "FROM" if level.query && !self.distinct_from(i) => Clause::From,
            "JOIN" => Clause::From,
            "ON" | "USING" if joined && prev != "DISTINCT" => Clause::On,
            "WHERE" if in_filter => Clause::Other,
            "WHERE" => Clause::Where,
            "GROUP" if prev != "WITHIN" => Clause::Group,
            "HAVING" => Clause::Having,
            "ORDER" => Clause::Order,
            "LIMIT" | "OFFSET" | "FETCH" => Clause::Limit,
            "WINDOW" | "UNION" | "INTERSECT" | "EXCEPT" | "RETURNING" | "WITH" => Clause::Other,
            "FOR" if level.query => Clause::Other,
            _ => return None,
        };
        Some(change)
    }

    /// Whether the FROM at `i` ends `IS [NOT] DISTINCT FROM`.
    fn distinct_from(&self, i: usize) -> bool {
        self.kw_back(i, 1) == "DISTINCT"
            && (self.kw_back(i, 2) == "IS"
                || (self.kw_back(i, 2) == "NOT" && self.kw_back(i, 3) == "IS"))
    }

    /// Marks every `::` and the type after it.
    fn casts(&mut self) {
        for i in 0..self.toks.len() {
            if self.punct(i) != "::" {
                continue;
            }
            let end = self.type_end(i + 1);
            if end > i + 1 {
                self.cast_end[i] = Some(end);
                for c in self.cast.iter_mut().take(end).skip(i) {
                    *c = true;
                }
            }
        }
    }

    /// The index just past the type name starting at `i` (after a `::`); `i` when none starts
    /// there. A possibly qualified name, the multi-word forms (`character varying`, `double
    /// precision`, `timestamp with time zone`), a `(n[, m])` modifier, `[]` suffixes.
    fn type_end(&self, i: usize) -> usize {
        if !self.is_ident(i) {
            return i;
        }
        let mut k = i + 1;
        while self.punct(k) == "." && self.is_ident(k + 1) {
            k += 2;
        }
        match (self.kw(k), self.kw(k + 1), self.kw(k + 2)) {
            ("VARYING" | "PRECISION", _, _) => k += 1,
            ("WITH" | "WITHOUT", "TIME", "ZONE") => k += 3,
            _ => {}
        }
        if self.punct(k) == "("
            && let Some(close) = self.mate(k)
            && (k + 1..close)
                .all(|j| self.kind(j) == Some(TokenKind::Number) || self.punct(j) == ",")
        {
            k = close + 1;
        }
        loop {
            if self.punct(k) != "[" {
                return k;
            }
            if self.punct(k + 1) == "]" {
                k += 2;
            } else if self.kind(k + 1) == Some(TokenKind::Number) && self.punct(k + 2) == "]" {
                k += 3;
            } else {
                return k;
            }
        }
    }

    /// Past any casts starting at `k`.
    fn skip_casts(&self, mut k: usize) -> usize {
        while let Some(end) = self.cast_end.get(k).copied().flatten() {
            k = end;
        }
        k
    }

    /// Whether a data-modifying statement appears: INSERT/UPDATE/DELETE/MERGE right inside a
    /// CTE body (`AS (UPDATE …`) or right after one (`WITH x AS (…) DELETE …`). A column
    /// called `update` elsewhere is not one.
    fn writes(&self) -> bool {
        (0..self.toks.len()).any(|i| {
            matches!(self.kw(i), "INSERT" | "UPDATE" | "DELETE" | "MERGE")
                && i.checked_sub(1).is_some_and(|p| {
                    let open = match self.punct(p) {
                        "(" => Some(p),
                        ")" => self.mate(p),
                        _ => None,
                    };
                    open.is_some_and(|o| matches!(self.kw_back(o, 1), "AS" | "MATERIALIZED"))
                })
        })
    }

    /// Whether a locking clause appears (at any depth: the server refuses them in a read-only
    /// transaction wherever they are).
    fn locks(&self) -> bool {
        (0..self.toks.len()).any(|i| {
            self.kw(i) == "FOR"
                && match self.kw(i + 1) {
                    "UPDATE" | "SHARE" => true,
                    "NO" => self.kw(i + 2) == "KEY" && self.kw(i + 3) == "UPDATE",
                    "KEY" => self.kw(i + 2) == "SHARE",
                    _ => false,
                }
        })
    }

    /// The relations read, each as its folded name parts, once, in text order.
    fn relations(&self) -> Vec<Vec<String>> {
        self.relations_by_depth()
            .into_iter()
            .map(|(parts, _)| parts)
            .collect()
    }

    /// [`Reading::relations`], each with how many brackets are around the FROM or JOIN naming
    /// it first.
    fn relations_by_depth(&self) -> Vec<(Vec<String>, usize)> {
        let ctes = self.ctes();
        let recursive = self.upper.iter().any(|k| k == "RECURSIVE");
        let mut out: Vec<(Vec<String>, usize)> = Vec::new();
        for i in 0..self.toks.len() {
            let starts = match self.kw(i) {
                "FROM" => self.own[i] == Some(Clause::From),
                "JOIN" => true,
                "TABLE" => i == 0 || matches!(self.punct(i - 1), "(" | ")"),
                _ => self.punct(i) == "," && matches!(self.own[i], Some(Clause::From | Clause::On)),
            };
            let Some((parts, at)) = starts.then(|| self.relation_at(i + 1)).flatten() else {
                continue;
            };
            // A CTE's name is not a relation, except inside its own body where a
            // non-recursive CTE cannot see itself: `WITH posts AS (SELECT … FROM posts)`.
            let cte = matches!(parts.as_slice(), [one] if ctes.iter().any(|(name, open, close)| {
                name == one && (recursive || !(*open < at && at < *close))
            }));
            if !cte && !out.iter().any(|(p, _)| *p == parts) {
                out.push((parts, self.depth[i]));
            }
        }
        out
    }

    /// The relation named at `j` (where a FROM item starts) and the index of its name: None
    /// for a subquery, a function (`generate_series(…)`, `ROWS FROM (…)`) or anything else.
    /// A parenthesised join, `FROM (a JOIN b ON …)`, gives its first relation.
    fn relation_at(&self, mut j: usize) -> Option<(Vec<String>, usize)> {
        while matches!(self.kw(j), "LATERAL" | "ONLY") || self.punct(j) == "(" {
            j += 1;
        }
        if matches!(self.kw(j), "SELECT" | "WITH" | "VALUES" | "TABLE" | "ROWS") {
            return None;
        }
        let at = j;
        let mut parts = vec![self.ident(j)?];
        j += 1;
        while self.punct(j) == "."
            && let Some(part) = self.ident(j + 1)
        {
            parts.push(part);
            j += 2;
        }
        (self.punct(j) != "(").then_some((parts, at))
    }

    /// Each CTE (and named window, which does no harm): its name and the brackets of its body.
    fn ctes(&self) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        for i in 0..self.toks.len() {
            let Some(name) = self.ident(i) else {
                continue;
            };
            let mut k = i + 1;
            if self.punct(k) == "(" {
                match self.mate(k) {
                    Some(close) => k = close + 1,
                    None => continue,
                }
            }
            if self.kw(k) != "AS" {
                continue;
            }
            k += 1;
            if self.kw(k) == "NOT" {
                k += 1;
            }
            if self.kw(k) == "MATERIALIZED" {
                k += 1;
            }
            if self.punct(k) == "(" {
                out.push((name, k, self.mate(k).unwrap_or(self.toks.len())));
            }
        }
        out
    }

    /// The key and every literal with the clause it sits in, in text order.
    fn walk(&self) -> (String, Vec<(Literal, Clause)>) {
        let mut key = Key::default();
        let mut found = Vec::new();
        let mut between = None;
        let mut i = 0;
        while i < self.toks.len() {
            if let Some((units, close, cast)) = self.literal_list(i) {
                for u in &units {
                    found.push(self.literal(u, &mut between));
                }
                let (l, r) = if self.punct(i) == "[" {
                    ("[", "]")
                } else {
                    ("(", ")")
                };
                let sep = if cast.is_empty() { "" } else { " " };
                key.push(&format!("{l}?{sep}{cast}…{r}"), self.tight_before(i), false);
                i = close + 1;
            } else if let Some(u) = self.unit_at(i) {
                found.push(self.literal(&u, &mut between));
                key.push("?", false, false);
                i = u.lit + 1;
            } else {
                key.push(&self.piece(i), self.tight_before(i), self.tight_after(i));
                i += 1;
            }
        }
        (key.out, found)
    }

    /// The literal (with its sign and casts) starting at `i`.
    fn unit_at(&self, i: usize) -> Option<Unit> {
        let t = self.toks.get(i)?;
        if self.cast.get(i) == Some(&true) {
            return None;
        }
        let lit = match t.kind {
            TokenKind::String | TokenKind::BitString | TokenKind::Number | TokenKind::Param => i,
            TokenKind::Operator
                if t.text == "-"
                    && self.kind(i + 1) == Some(TokenKind::Number)
                    && self.operand_next(i) =>
            {
                i + 1
            }
            _ => return None,
        };
        Some(Unit {
            first: i,
            lit,
            end: self.skip_casts(lit + 1),
        })
    }

    /// Whether an operand, not an operator, comes at `i`: a `-` there is a sign.
    fn operand_next(&self, i: usize) -> bool {
        let Some(p) = i.checked_sub(1) else {
            return true;
        };
        match self.kind(p) {
            Some(TokenKind::Operator) => true,
            Some(TokenKind::Punct) => matches!(self.punct(p), "(" | "," | "["),
            Some(TokenKind::Word) => OPERAND_NEXT.contains(&self.kw(p)),
            _ => false,
        }
    }

    /// At `i`, a bracketed list after IN or ARRAY holding only literals with the same cast
    /// (or none): its items, its closing bracket and the cast as the key writes it.
    fn literal_list(&self, i: usize) -> Option<(Vec<Unit>, usize, String)> {
        let opener = (self.punct(i), self.kw_back(i, 1));
        if !matches!(opener, ("(", "IN") | ("[", "ARRAY")) {
            return None;
        }
        let close = self.mate(i)?;
        let mut units = Vec::new();
        let mut j = i + 1;
        loop {
            let u = self.unit_at(j)?;
            j = u.end;
            units.push(u);
            if j == close {
                break;
            }
            if self.punct(j) != "," {
                return None;
            }
            j += 1;
        }
        let cast = self.cast_text(&units[0]);
        if units.iter().any(|u| self.cast_text(u) != cast) {
            return None;
        }
        Some((units, close, cast))
    }

    /// The casts after a literal as the key writes them (`::int[]`), "" when none.
    fn cast_text(&self, u: &Unit) -> String {
        let mut key = Key::default();
        for j in u.lit + 1..u.end {
            key.push(&self.piece(j), self.tight_before(j), self.tight_after(j));
        }
        key.out
    }

    /// The literal of a unit, with its column and the clause it sits in.
    fn literal(
        &self,
        u: &Unit,
        between: &mut Option<(usize, Option<String>)>,
    ) -> (Literal, Clause) {
        let t = &self.toks[u.lit];
        let value = match t.kind {
            TokenKind::String => t
                .string_value(Dialect::default())
                .map_or_else(|| LiteralValue::Other(t.text.into()), LiteralValue::Text),
            TokenKind::Number if u.first < u.lit => LiteralValue::Number(format!("-{}", t.text)),
            TokenKind::Number => LiteralValue::Number(t.text.into()),
            TokenKind::Param => t
                .text
                .get(1..)
                .and_then(|n| n.parse().ok())
                .map_or_else(|| LiteralValue::Other(t.text.into()), LiteralValue::Param),
            _ => LiteralValue::Other(t.text.into()),
        };
        let literal = Literal {
            start: self.toks[u.first].start,
            end: t.start + t.text.len(),
            value,
            column: self.column_for(u, between),
        };
        (literal, self.clause[u.lit])
    }

    /// The column a literal is compared with. `between` carries the column of a `BETWEEN`'s
    /// first bound (and where that bound ends) to its second.
    fn column_for(
        &self,
        u: &Unit,
        between: &mut Option<(usize, Option<String>)>,
    ) -> Option<String> {
        let mut left = u.first.checked_sub(1);
        if self.kind(u.lit) == Some(TokenKind::String)
            && let Some(l) = left
            && TYPED.contains(&self.kw(l))
        {
            left = l.checked_sub(1);
        }
        if let Some(l) = left {
            if let Some(other) = self.operand_before(l) {
                return self.column_ending_at(other);
            }
            if matches!(self.kw(l), "BETWEEN" | "SYMMETRIC" | "ASYMMETRIC") {
                let word = if self.kw(l) == "BETWEEN" {
                    Some(l)
                } else {
                    l.checked_sub(1)
                };
                let column = word
                    .and_then(|w| w.checked_sub(1))
                    .and_then(|k| self.skip_not_back(k))
                    .and_then(|k| self.column_ending_at(k));
                *between = Some((u.end, column.clone()));
                return column;
            }
            if self.kw(l) == "AND"
                && let Some((at, column)) = between.take()
                && at == l
            {
                return column;
            }
        }
        // On the left of a comparison only as a whole operand: in `a + 1 > b`, 1 is not
        // compared with b.
        let whole = left.is_none_or(|l| self.op(l).is_empty() && self.operand_next(l + 1));
        if whole && let Some(other) = self.operand_after(u.end) {
            return self.column_starting_at(other);
        }
        self.list_column(u.first, u.end)
    }

    /// `k`, or the token before it when `k` is NOT.
    fn skip_not_back(&self, k: usize) -> Option<usize> {
        if self.kw(k) == "NOT" {
            k.checked_sub(1)
        } else {
            Some(k)
        }
    }

    /// When the tokens ending at `l` are a comparison (`=`, `[NOT] LIKE`, `IS [NOT] DISTINCT
    /// FROM`, …) with an operand to its left, the index where that operand ends.
    fn operand_before(&self, l: usize) -> Option<usize> {
        if COMPARISONS.contains(&self.op(l)) {
            return l.checked_sub(1);
        }
        match self.kw(l) {
            "LIKE" | "ILIKE" => self.skip_not_back(l.checked_sub(1)?),
            "FROM" if self.distinct_from(l) => {
                let is = self.skip_not_back(l.checked_sub(2)?)?;
                is.checked_sub(1)
            }
            _ => None,
        }
    }

    /// When a comparison starts at `e`, the index where its right operand starts.
    fn operand_after(&self, e: usize) -> Option<usize> {
        if COMPARISONS.contains(&self.op(e)) {
            return Some(e + 1);
        }
        let d = if self.kw(e + 1) == "NOT" {
            e + 2
        } else {
            e + 1
        };
        (self.kw(e) == "IS" && self.kw(d) == "DISTINCT" && self.kw(d + 1) == "FROM")
            .then_some(d + 2)
    }

    /// The column of a column reference (or one-column function call, `lower(email)`, or
    /// either with a cast) ending at `k`.
    fn column_ending_at(&self, mut k: usize) -> Option<String> {
        while self.cast.get(k) == Some(&true) {
            k = k.checked_sub(1)?;
        }
        if self.punct(k) != ")" {
            return self.ident(k);
        }
        let open = self.mate(k)?;
        if !self.is_ident(open.checked_sub(1)?) {
            return None;
        }
        let (column, after) = self.column_ref(open + 1)?;
        (after == k).then_some(column)
    }

    /// The column of a column reference (or one-column function call) starting at `k`.
    fn column_starting_at(&self, k: usize) -> Option<String> {
        let (column, after) = self.column_ref(k)?;
        if self.punct(after) != "(" {
            return Some(column);
        }
        let close = self.mate(after)?;
        let (inner, end) = self.column_ref(after + 1)?;
        (end == close).then_some(inner)
    }

    /// `name[.name…]` at `k`: its last part and the index after it.
    fn column_ref(&self, k: usize) -> Option<(String, usize)> {
        let mut last = self.ident(k)?;
        let mut k = k + 1;
        while self.punct(k) == "."
            && let Some(part) = self.ident(k + 1)
        {
            last = part;
            k += 2;
        }
        Some((last, k))
    }

    /// The column of a list that `first..end` is one item of: `col [NOT] IN (…)`, `col = ANY
    /// (…)`, `col = ANY (ARRAY[…])`.
    fn list_column(&self, first: usize, end: usize) -> Option<String> {
        let mut open = self.item_of(first, end)?;
        if self.punct(open) == "[" {
            let array = open.checked_sub(1)?;
            if self.kw(array) != "ARRAY" {
                return None;
            }
            let after = self.skip_casts(self.mate(open)? + 1);
            open = self.item_of(array, after)?;
        }
        if self.punct(open) != "(" {
            return None;
        }
        let before = open.checked_sub(1)?;
        match self.kw(before) {
            "IN" => self.column_ending_at(self.skip_not_back(before.checked_sub(1)?)?),
            "ANY" | "SOME" | "ALL" => {
                self.column_ending_at(self.operand_before(before.checked_sub(1)?)?)
            }
            _ => None,
        }
    }

    /// The bracket that `first..end` is one whole item of (a bracket or `,` on each side).
    fn item_of(&self, first: usize, end: usize) -> Option<usize> {
        let before = self.punct(first.checked_sub(1)?);
        let whole = matches!(before, "(" | "," | "[") && matches!(self.punct(end), ")" | "," | "]");
        if whole { self.parent[first] } else { None }
    }

    /// The first column of the outermost `ORDER BY` that sorts rows (not one inside a function
    /// call, `string_agg(x ORDER BY y)`, or a window, `OVER (ORDER BY …)`).
    fn order_column(&self) -> Option<String> {
        let mut best: Option<usize> = None;
        for i in 0..self.toks.len() {
            if self.kw(i) != "ORDER" || self.kw(i + 1) != "BY" {
                continue;
            }
            if let Some(open) = self.parent[i]
                && (matches!(self.kw_back(open, 1), "OVER" | "GROUP")
                    || open.checked_sub(1).is_some_and(|b| self.is_ident(b)))
            {
                continue;
            }
            if best.is_none_or(|b| self.depth[i] < self.depth[b]) {
                best = Some(i);
            }
        }
        self.column_starting_at(best? + 2)
    }

    /// The token at `i` as the key writes it.
    fn piece(&self, i: usize) -> String {
        let t = &self.toks[i];
        match t.kind {
            // A type's words are names, even `with time zone`.
            TokenKind::Word if shown_as_keyword(self.kw(i)) && !self.cast[i] => {
                self.kw(i).to_string()
            }
            TokenKind::Word => t.identifier().unwrap_or_else(|| t.text.into()),
            TokenKind::QuotedIdent => match t.identifier() {
                // Written as the unquoted word would be, so `"posts"` and `posts` are one shape.
                Some(v) if plain(&v) && !reserved(&v.to_ascii_uppercase()) => {
                    let upper = v.to_ascii_uppercase();
                    if shown_as_keyword(&upper) { upper } else { v }
                }
                Some(v) => format!("\"{}\"", v.replace('"', "\"\"")),
                None => t.text.into(),
            },
            _ => t.text.into(),
        }
    }

    /// Whether the key writes no space before the token at `i`.
    fn tight_before(&self, i: usize) -> bool {
        match self.punct(i) {
            "." | "," | ")" | "[" | "]" => true,
            // A function's arguments: `count(*)`, but `EXISTS (`, `OVER (`.
            "(" => i
                .checked_sub(1)
                .is_some_and(|p| self.is_ident(p) && !shown_as_keyword(self.kw(p))),
            _ => false,
        }
    }

    /// Whether the key writes no space after the token at `i`.
    fn tight_after(&self, i: usize) -> bool {
        matches!(self.punct(i), "." | "(" | "[" | "::")
    }
}

/// Whether a name needs no quotes: lower-case letters, digits, `_`, `$`, not starting with a
/// digit or `$`.
fn plain(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
}

/// A shape key being written.
#[derive(Default)]
struct Key {
    out: String,
    /// Whether the last piece wants no space after it.
    tight: bool,
}

impl Key {
    fn push(&mut self, piece: &str, tight_before: bool, tight_after: bool) {
        if !(self.out.is_empty() || self.tight || tight_before) {
            self.out.push(' ');
        }
        self.out.push_str(piece);
        self.tight = tight_after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails loudly unless the text is a read path.
    fn reads(text: &str) {
        assert_eq!(read_path(text), Ok(()), "{text}");
    }

    /// Why the text is skipped; fails loudly when it is not.
    fn skipped(text: &str) -> Skip {
        match read_path(text) {
            Ok(()) => panic!("read as a read path: {text}"),
            Err(skip) => skip,
        }
    }

    fn key(text: &str) -> String {
        shape(text).key
    }

    fn columns(text: &str) -> Vec<Option<String>> {
        shape(text).literals.into_iter().map(|l| l.column).collect()
    }

    fn some(names: &[&str]) -> Vec<Option<String>> {
        names.iter().map(|n| Some(n.to_string())).collect()
    }

    #[test]
    fn keyword_lists_are_sorted_for_binary_search() {
        assert!(RESERVED.is_sorted());
        assert!(CLAUSE_WORDS.is_sorted());
    }

    #[test]
    fn reads_queries_as_applications_send_them() {
        reads("SELECT * FROM posts WHERE id = $1");
        reads("/* app:forum */ SELECT * FROM posts WHERE id = $1");
        reads("SELECT * FROM posts WHERE id = 1 /*controller='posts',action='show'*/");
        reads("SELECT * FROM posts WHERE id = 1;");
        reads("SELECT * FROM posts WHERE id = 1;  -- done\n");
        reads("(SELECT id FROM posts) UNION (SELECT id FROM threads)");
        reads(
            "WITH t AS (SELECT * FROM threads) SELECT * FROM t JOIN posts p ON p.thread_id = t.id",
        );
        reads("TABLE posts");
        reads("SELECT * FROM posts WHERE created_at > now() - interval '1 day' FOR READ ONLY");
    }

    #[test]
    fn empty_text_is_skipped() {
        for text in ["", "   ", "-- only a comment\n", "/* c */", ";", " ; ;"] {
            assert_eq!(skipped(text), Skip::Empty, "{text:?}");
        }
    }

    #[test]
    fn several_statements_are_skipped() {
        assert_eq!(skipped("SELECT * FROM a; SELECT * FROM b"), Skip::Several);
        assert_eq!(skipped("SELECT * FROM a; SELECT * FROM b;"), Skip::Several);
        assert_eq!(skipped("(SELECT * FROM a; SELECT * FROM b)"), Skip::Several);
    }

    #[test]
    fn statements_that_are_not_queries_are_skipped_by_their_keyword() {
        let cases = [
            ("INSERT INTO posts VALUES (1)", "INSERT"),
            ("update posts SET x = 1", "UPDATE"),
            ("DELETE FROM posts", "DELETE"),
            ("SET search_path TO app", "SET"),
            ("RESET ALL", "RESET"),
            ("BEGIN", "BEGIN"),
            ("COMMIT", "COMMIT"),
            ("EXPLAIN SELECT * FROM posts", "EXPLAIN"),
            ("SHOW work_mem", "SHOW"),
            ("PREPARE p AS SELECT * FROM posts", "PREPARE"),
            ("EXECUTE p(1)", "EXECUTE"),
            ("DEALLOCATE ALL", "DEALLOCATE"),
            ("COPY posts TO STDOUT", "COPY"),
            ("SELECT * INTO archive FROM posts", "SELECT INTO"),
            ("\"weird\" thing", "\"weird\""),
        ];
        for (text, word) in cases {
            assert_eq!(skipped(text), Skip::NotRead(word.into()), "{text}");
        }
        assert_eq!(
            skipped("INSERT INTO t VALUES (1)").reason(),
            "not a read (INSERT)"
        );
    }

    #[test]
    fn data_modifying_with_is_skipped() {
        for text in [
            "WITH x AS (UPDATE posts SET v = 1 RETURNING id) SELECT * FROM x",
            "WITH x AS MATERIALIZED (DELETE FROM posts RETURNING id) SELECT * FROM x",
            "WITH x AS (SELECT 1), y AS (insert into t values (1) returning *) SELECT * FROM y",
            "WITH x AS (SELECT id FROM posts) DELETE FROM posts USING x WHERE posts.id = x.id",
        ] {
            assert_eq!(skipped(text), Skip::Writes, "{text}");
        }
        // A column called update is not a write.
        reads("SELECT \"update\", count(*) update FROM posts GROUP BY 1");
    }

    #[test]
    fn locking_clauses_are_skipped() {
        for lock in [
            "FOR UPDATE",
            "FOR NO KEY UPDATE",
            "FOR SHARE",
            "for key share",
        ] {
            let text = format!("SELECT * FROM posts WHERE id = $1 {lock} SKIP LOCKED");
            assert_eq!(skipped(&text), Skip::Locks, "{text}");
        }
        assert_eq!(
            skipped("SELECT * FROM (SELECT * FROM jobs LIMIT 1 FOR UPDATE) j"),
            Skip::Locks
        );
        reads("SELECT substring(title FROM 1 FOR 3) FROM posts");
    }

    #[test]
    fn statements_reading_no_table_are_skipped() {
        for text in [
            "SELECT 1",
            "SELECT set_config('search_path', 'app', false)",
            "select version()",
            "SELECT count(*) FROM generate_series(1, 3)",
            "SELECT * FROM unnest($1::int[]) AS u(id)",
            "SELECT * FROM ROWS FROM (generate_series(1, 2)) r",
            "VALUES (1), (2)",
            "SELECT * FROM (VALUES (1)) v(x)",
            "WITH one AS (SELECT 1 AS x) SELECT x FROM one",
            "SELECT extract(epoch FROM now())",
        ] {
            assert_eq!(skipped(text), Skip::NoTable, "{text}");
        }
    }

    #[test]
    fn catalog_queries_are_skipped() {
        for text in [
            "SELECT relname FROM pg_catalog.pg_class WHERE oid = $1",
            "SELECT * FROM information_schema.tables",
            "SELECT * FROM \"pg_catalog\".\"pg_type\"",
            "SELECT * FROM pg_stat_activity WHERE state = 'active'",
            "SELECT p.* FROM posts p JOIN pg_class c ON c.relname = 'posts'",
            "SELECT * FROM posts, pg_namespace",
        ] {
            assert_eq!(skipped(text), Skip::Catalog, "{text}");
        }
        assert_eq!(Skip::Catalog.reason(), "catalog query");
    }

    #[test]
    fn literal_values_do_not_change_the_key() {
        let k = key("SELECT * FROM posts WHERE thread_id = 5");
        assert_eq!(k, "SELECT * FROM posts WHERE thread_id = ?");
        assert_eq!(key("SELECT * FROM posts WHERE thread_id = 7"), k);
        assert_eq!(key("SELECT * FROM posts WHERE thread_id = $1"), k);
        assert_eq!(key("SELECT * FROM posts WHERE thread_id = -5"), k);
        assert_ne!(key("SELECT * FROM posts WHERE forum_id = 5"), k);
    }

    #[test]
    fn in_lists_of_any_length_are_one_shape() {
        let k = key("SELECT * FROM tags WHERE id IN (1, 2, 3)");
        assert_eq!(k, "SELECT * FROM tags WHERE id IN (?…)");
        assert_eq!(key("SELECT * FROM tags WHERE id IN ($1,$2)"), k);
        assert_eq!(key("SELECT * FROM tags WHERE id IN (7)"), k);
        assert_eq!(key("SELECT * FROM tags WHERE id IN (-1, 2)"), k);
        assert_eq!(
            key("SELECT * FROM tags WHERE name IN ('a'::text, 'b'::text)"),
            "SELECT * FROM tags WHERE name IN (? ::text…)"
        );
        assert_eq!(
            key("SELECT * FROM tags WHERE id = ANY(ARRAY[1, 2])"),
            key("SELECT * FROM tags WHERE id = ANY(ARRAY[3])")
        );
        // Not only literals: kept as written.
        assert_eq!(
            key("SELECT * FROM tags WHERE id IN (1, parent_id)"),
            "SELECT * FROM tags WHERE id IN (?, parent_id)"
        );
    }

    #[test]
    fn comments_whitespace_case_and_quoting_do_not_change_the_key() {
        let k = key("SELECT p.id FROM posts p WHERE p.visibility = 'visible' LIMIT 20");
        assert_eq!(k, "SELECT p.id FROM posts p WHERE p.visibility = ? LIMIT ?");
        for text in [
            "/* app */ select P.Id\n  from   Posts p -- x\n where p.visibility='deleted' limit 5;",
            "SELECT \"p\".\"id\" FROM \"posts\" p WHERE p.\"visibility\" = $1 LIMIT $2",
        ] {
            assert_eq!(key(text), k, "{text}");
        }
        assert_ne!(
            key("SELECT \"Posts\".id FROM \"Posts\""),
            key("SELECT posts.id FROM posts")
        );
    }

    #[test]
    fn casts_keep_their_type() {
        assert_eq!(
            key("SELECT * FROM t WHERE ids && '{1,2}'::int[]"),
            "SELECT * FROM t WHERE ids && ? ::int[]"
        );
        assert_eq!(
            key("SELECT x::character varying(255), $1::timestamp with time zone FROM t"),
            "SELECT x ::character varying(255), ? ::timestamp with time zone FROM t"
        );
        assert_ne!(
            key("SELECT * FROM t WHERE a = $1::int"),
            key("SELECT * FROM t WHERE a = $1::text")
        );
        assert_eq!(key("SELECT count(*) FROM t"), "SELECT count(*) FROM t");
    }

    #[test]
    fn literals_are_found_in_text_order_with_their_values() {
        let text = "SELECT 'it''s', E'a\\nb', -5, 1.5e3, $12, B'101', 'open FROM t";
        let lits = shape(text).literals;
        let values: Vec<LiteralValue> = lits.iter().map(|l| l.value.clone()).collect();
        assert_eq!(
            values,
            [
                LiteralValue::Text("it's".into()),
                LiteralValue::Text("a\nb".into()),
                LiteralValue::Number("-5".into()),
                LiteralValue::Number("1.5e3".into()),
                LiteralValue::Param(12),
                LiteralValue::Other("B'101'".into()),
                LiteralValue::Other("'open FROM t".into()),
            ]
        );
        assert_eq!(&text[lits[2].start..lits[2].end], "-5");
        assert_eq!(&text[lits[0].start..lits[0].end], "'it''s'");
        // A type modifier is part of its type.
        assert!(shape("SELECT x::varchar(255) FROM t").literals.is_empty());
    }

    #[test]
    fn a_literal_knows_the_column_it_is_compared_with() {
        let visible = "SELECT * FROM posts p WHERE p.visibility = 'visible'";
        let deleted = "SELECT * FROM posts p WHERE p.visibility = 'deleted'";
        assert_eq!(key(visible), key(deleted));
        assert_eq!(columns(visible), some(&["visibility"]));
        assert_eq!(columns(deleted), some(&["visibility"]));
        let cases = [
            (
                "SELECT * FROM t WHERE 'visible' = visibility",
                vec!["visibility"],
            ),
            (
                "SELECT * FROM t WHERE a <> 1 AND b != 2 AND c >= $1",
                vec!["a", "b", "c"],
            ),
            (
                "SELECT * FROM t WHERE status IN ('a', 'b')",
                vec!["status", "status"],
            ),
            (
                "SELECT * FROM t WHERE status NOT IN ('a', $1)",
                vec!["status", "status"],
            ),
            ("SELECT * FROM t WHERE id = ANY('{1,2}')", vec!["id"]),
            ("SELECT * FROM t WHERE id = ANY($1::int[])", vec!["id"]),
            (
                "SELECT * FROM t WHERE id = ANY(ARRAY[1, 2]::int[])",
                vec!["id", "id"],
            ),
            ("SELECT * FROM t WHERE a IS DISTINCT FROM 1", vec!["a"]),
            ("SELECT * FROM t WHERE a IS NOT DISTINCT FROM $1", vec!["a"]),
            (
                "SELECT * FROM t WHERE v = 'visible'::post_visibility",
                vec!["v"],
            ),
            ("SELECT * FROM t WHERE t.status::text = 'x'", vec!["status"]),
            ("SELECT * FROM t WHERE lower(email) = $1", vec!["email"]),
            ("SELECT * FROM t WHERE name NOT ILIKE 'a%'", vec!["name"]),
            (
                "SELECT * FROM t WHERE at BETWEEN $1 AND $2",
                vec!["at", "at"],
            ),
            ("SELECT * FROM t WHERE at > DATE '2024-01-01'", vec!["at"]),
            ("SELECT * FROM \"t\" WHERE \"t\".\"Kind\" = 1", vec!["Kind"]),
        ];
        for (text, want) in cases {
            assert_eq!(columns(text), some(&want), "{text}");
        }
        assert_eq!(
            columns("SELECT f(1, 'x') FROM t WHERE a + 1 > b LIMIT 20 OFFSET $1"),
            [None, None, None, None, None]
        );
    }

    #[test]
    fn relations_come_from_from_and_join() {
        assert_eq!(
            relations(
                "SELECT * FROM public.posts p JOIN \"Threads\" t ON t.id = p.thread_id, users u"
            ),
            ["public.posts", "Threads", "users"]
        );
        assert_eq!(
            relations(
                "SELECT * FROM posts WHERE id IN (SELECT post_id FROM tags WHERE tags.n = 1)"
            ),
            ["posts", "tags"]
        );
        assert_eq!(
            relations(
                "WITH recent AS (SELECT * FROM posts) SELECT * FROM recent r JOIN users u ON u.id = r.user_id"
            ),
            ["posts", "users"]
        );
        // Within its own body, a CTE's name is the table it shadows.
        assert_eq!(
            relations("WITH posts AS (SELECT * FROM posts WHERE v) SELECT * FROM posts"),
            ["posts"]
        );
        assert_eq!(
            relations(
                "SELECT extract(year FROM created_at), substring(t FROM 2) FROM posts WHERE a IS DISTINCT FROM b"
            ),
            ["posts"]
        );
        assert_eq!(
            relations(
                "SELECT * FROM ((a JOIN b ON true) LEFT JOIN LATERAL (SELECT * FROM c) x ON true), ONLY d"
            ),
            ["a", "b", "c", "d"]
        );
        assert!(relations("SELECT * FROM generate_series(1, 3) g").is_empty());
    }

    #[test]
    fn names_say_what_an_orm_statement_reads() {
        let cases = [
            (
                "SELECT p.* FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' ORDER BY p.created_at LIMIT 20",
                "posts-by-thread-id-visibility-created-at",
            ),
            // Rails: every compared column, parameter or not, then the ORDER BY column.
            (
                "SELECT \"posts\".* FROM \"posts\" WHERE \"posts\".\"thread_id\" = $1 AND \"posts\".\"visibility\" = $2 ORDER BY \"posts\".\"created_at\" ASC LIMIT $3",
                "posts-by-thread-id-visibility-created-at",
            ),
            (
                "SELECT \"app_post\".\"id\", \"app_post\".\"title\" FROM \"app_post\" WHERE (\"app_post\".\"thread_id\" = 5 AND \"app_post\".\"visibility\" = 'visible') ORDER BY \"app_post\".\"created_at\" DESC LIMIT 21",
                "app-post-by-thread-id-visibility-created-at",
            ),
            (
                "SELECT t.* FROM threads t JOIN forums f ON f.id = t.forum_id WHERE f.slug = $1 ORDER BY t.bumped_at DESC",
                "threads-by-slug-bumped-at",
            ),
            (
                "SELECT * FROM threads WHERE forum_id = $1 ORDER BY bumped_at DESC",
                "threads-by-forum-id-bumped-at",
            ),
            (
                "SELECT * FROM threads ORDER BY last_post_at DESC LIMIT 20",
                "threads-by-last-post-at",
            ),
            ("SELECT count(*) FROM threads", "threads"),
            (
                "SELECT m.id, (SELECT count(*) FROM posts p WHERE p.author_id = m.id) FROM members m WHERE m.id = $1",
                "members-by-id",
            ),
            (
                "WITH t AS (SELECT id FROM threads WHERE forum_id = $1 ORDER BY bumped_at DESC LIMIT 20) SELECT p.* FROM posts p JOIN t ON t.id = p.thread_id",
                "posts-by-forum-id-bumped-at",
            ),
            (
                "SELECT * FROM users WHERE id IN (SELECT user_id FROM memberships WHERE group_id = $1)",
                "users-by-group-id",
            ),
            (
                "SELECT \"tags\".* FROM \"tags\" WHERE \"tags\".\"id\" IN ($1, $2, $3)",
                "tags-by-id",
            ),
            (
                "SELECT * FROM t WHERE a = 1 AND b = 2 AND c = 3 AND d = 4 AND a = 5 ORDER BY a",
                "t-by-a-b-c",
            ),
            (
                "SELECT string_agg(name, ',' ORDER BY name), row_number() OVER (ORDER BY id) FROM tags",
                "tags",
            ),
            ("SELECT 1", "query"),
            ("", "query"),
            ("SELECT * FROM \"日本\" WHERE x = 1", "query-by-x"),
        ];
        for (text, want) in cases {
            assert_eq!(name(text), want, "{text}");
        }
    }

    #[test]
    fn long_names_are_cut_at_a_dash() {
        let text = "SELECT * FROM a_rather_long_relation_name WHERE first_long_column = 1 \
                    AND second_long_column = 2 AND third_long_column = 3";
        let n = name(text);
        assert_eq!(
            n,
            "a-rather-long-relation-name-by-first-long-column-second-long"
        );
        assert!(n.len() <= MAX_NAME);
        let wide = format!("SELECT * FROM {} WHERE x = 1", "t".repeat(63));
        assert_eq!(name(&wide), "t".repeat(60));
        let by = format!("SELECT * FROM {} WHERE xx = 1", "t_".repeat(29));
        assert_eq!(name(&by), format!("{}t", "t-".repeat(28)));
    }

    #[test]
    fn read_paths_with_one_name_are_told_apart_by_what_differs() {
        let visible = "SELECT * FROM posts WHERE thread_id = $1 AND visibility = 'visible'";
        let deleted = "SELECT * FROM posts WHERE thread_id = $1 AND visibility = 'deleted'";
        let key =
            "SELECT * FROM posts WHERE thread_id = ? AND visibility = ?\nvisibility = 'deleted'";
        assert_eq!(distinctions(key, deleted, visible), ["deleted"]);
        // A value both compare with tells nothing apart.
        let key = "k\nvisibility = 'visible'";
        let deep = "SELECT * FROM posts WHERE visibility = 'visible' OFFSET 40";
        assert_eq!(distinctions(key, deep, visible), ["offset"]);
        let first = "SELECT * FROM posts WHERE thread_id = $1 ORDER BY id LIMIT 20";
        let deep = "SELECT * FROM posts WHERE thread_id = $1 ORDER BY id LIMIT 20 OFFSET 40";
        assert_eq!(distinctions("k", deep, first), ["offset"]);
        let count = "SELECT count(*) FROM posts WHERE thread_id = $1";
        assert_eq!(distinctions("k", count, first), ["count"]);
        // Only a literal differs: nothing readable, the tag tells them apart.
        assert!(
            distinctions(
                "k",
                "SELECT 1 FROM t WHERE a = 2",
                "SELECT 1 FROM t WHERE a = 3"
            )
            .is_empty()
        );
        assert_eq!(
            distinguished("posts-by-thread-id", "offset"),
            "posts-by-thread-id-offset"
        );
        assert!(distinguished(&"p".repeat(60), "offset").len() <= MAX_NAME);
    }

    #[test]
    fn tag_is_stable_and_splits_on_extra_values() {
        assert_eq!(tag("SELECT * FROM posts WHERE id = ?", &[]), "c533af");
        assert_eq!(tag("", &[]), "cbf29c");
        assert_ne!(tag("a", &["b"]), tag("ab", &[]));
        assert_ne!(tag("k", &["visible"]), tag("k", &["deleted"]));
        assert_eq!(tag("k", &["visible"]).len(), 6);
    }

    /// A tiny deterministic generator (a 64-bit LCG), so the no-panic test is the same on
    /// every run.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, below: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % below
        }
    }

    /// Every public function on one text, with the invariants each promises.
    fn exercise(text: &str) {
        let _ = read_path(text).map_err(|s| s.reason());
        let s = shape(text);
        for l in &s.literals {
            assert!(text.get(l.start..l.end).is_some(), "{text:?}: {l:?}");
        }
        let _ = relations(text);
        let n = name(text);
        assert!(!n.is_empty() && n.len() <= MAX_NAME, "{text:?}: {n}");
        assert_eq!(tag(&s.key, &[&n]).len(), 6);
    }

    /// Pieces of SQL, whole and broken, for the no-panic test.
    const FRAGMENTS: &[&str] = &[
        "SELECT",
        "FROM",
        "WHERE",
        "JOIN",
        "ON",
        "IN",
        "(",
        ")",
        "[",
        "]",
        ",",
        ".",
        "::",
        "int[]",
        "=",
        "-",
        "5",
        "$1",
        "'x'",
        "'open",
        "\"q\"",
        "\"open",
        "ARRAY",
        "ANY",
        "BETWEEN",
        "AND",
        "NOT",
        "IS",
        "DISTINCT",
        "ORDER",
        "BY",
        "LIMIT",
        "WITH",
        "AS",
        "MATERIALIZED",
        "UPDATE",
        "FOR",
        "SHARE",
        "KEY",
        "NO",
        "INTO",
        "posts",
        "p",
        "id",
        "pg_class",
        "pg_catalog",
        ";",
        "/*",
        "*/",
        "--",
        "\n",
        "$$",
        "E'\\",
        "DATE",
        "LIKE",
        "TABLE",
        "LATERAL",
        "ROWS",
        "OVER",
        "FILTER",
        "é",
        "U&\"",
        "B'1",
        "1e",
    ];

    // No input makes any of it panic: SQL-ish fragments in random order (unbalanced
    // brackets, unterminated strings, casts with no type), and every prefix of a busy query.
    #[test]
    fn no_panic_on_pseudo_random_sql() {
        let mut rng = Lcg(0x5eed);
        for _ in 0..600 {
            let len = 1 + rng.next(40);
            let text: Vec<&str> = (0..len)
                .map(|_| FRAGMENTS[rng.next(FRAGMENTS.len())])
                .collect();
            let sep = if rng.next(2) == 0 { " " } else { "" };
            exercise(&text.join(sep));
        }
        let busy = "WITH t(a) AS NOT MATERIALIZED (SELECT x::numeric(10,2) FROM \"s\".t \
                    WHERE a = ANY(ARRAY[-1, $2]::int[]) AND b BETWEEN 'a' AND 'b') \
                    SELECT * FROM t JOIN u ON u.id = t.a WHERE c IN (1, 2) ORDER BY lower(d)";
        for (i, _) in busy.char_indices() {
            exercise(&busy[..i]);
        }
        exercise(&"(".repeat(10_000));
        exercise(&"SELECT * FROM t WHERE a IN (1, ".repeat(2_000));
    }
}
