//! Reading PostgreSQL server logs (csvlog, jsonlog, stderr) back into the statements the
//! application sent, with the parameter values it bound.
//!
//! The reader streams: one line at a time through [`BufRead`], so a log of gigabytes costs the
//! memory of its longest record, and no record is kept beyond [`MAX_RECORD`] bytes: a statement
//! whose log record (its text, with its logged parameters) is longer is read past without being
//! kept, counted ([`Reader::oversized`]) and left out, so one huge statement costs what a record
//! at the cap costs. It understands what PostgreSQL 13 to 18 write for
//! `log_statement` and `log_min_duration_statement`:
//!
//! - `statement: TEXT` and `duration: N ms  statement: TEXT` (simple query protocol);
//! - `execute NAME: TEXT` (extended protocol, also `<unnamed>` and `NAME/PORTAL`), with its
//!   `parameters: $1 = '…', $2 = NULL` detail. The `parse` and `bind` lines that
//!   `log_min_duration_statement = 0` adds for the same statement, and `execute fetch from`
//!   (a portal fetched in chunks), are not statements of their own and are left out;
//! - `EXECUTE name(args)` of an SQL-level `PREPARE`, resolved to the prepared query through the
//!   `prepare: PREPARE …` detail the server writes, or else through the `PREPARE` seen earlier in
//!   the same session. The `PREPARE` itself is not an entry.
//!
//! Every other message (connections, checkpoints, errors, `duration: N ms` alone) is skipped
//! without comment. Message texts are matched in English: a server running with another
//! `lc_messages` translates `statement:` and the severity words, and its log reads as nothing.
//!
//! Not supported: syslog and eventlog destinations; logs not in UTF-8 (a fatal error, since the
//! reader cannot tell them from binary data); `EXECUTE` arguments that are expressions (their
//! text is passed on as the value). A simple query string holding several statements is one
//! entry with the whole text, unless it uses `PREPARE`/`EXECUTE`/`DEALLOCATE`, in which case
//! each statement is handled on its own.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::BufRead;

use serde::Deserialize;

use crate::sql::{self, TokenKind};

/// The most of one log record the reader keeps (1 MiB): a statement, with its parameters, longer
/// than this is left out and counted. A real read path is far smaller; an ORM's longest `IN`
/// lists are some kilobytes.
pub const MAX_RECORD: usize = 1 << 20;

/// What was found in statement texts seen lately, by text: a log repeats the same few texts,
/// each then read once. Bounded: a text over 16 kB is not remembered, and past 50,000 texts or
/// 32 MB of them the memory is emptied and begins again, so a log of ever new texts (literals
/// written inline) costs no more memory than that.
#[derive(Debug)]
pub struct Remembered<T> {
    found: HashMap<String, T>,
    bytes: usize,
}

impl<T> Default for Remembered<T> {
    fn default() -> Self {
        Remembered {
            found: HashMap::new(),
            bytes: 0,
        }
    }
}

impl<T: Clone> Remembered<T> {
    const MOST_TEXTS: usize = 50_000;
    const MOST_BYTES: usize = 32 << 20;
    const LONGEST: usize = 16 << 10;

    pub fn get(&self, text: &str) -> Option<&T> {
        self.found.get(text)
    }

    pub fn remember(&mut self, text: &str, found: T) {
        if text.len() > Self::LONGEST {
            return;
        }
        if self.found.len() >= Self::MOST_TEXTS || self.bytes + text.len() > Self::MOST_BYTES {
            self.found.clear();
            self.bytes = 0;
        }
        self.bytes += text.len();
        self.found.insert(text.to_owned(), found);
    }
}

/// The most of one line the reader keeps: a record at [`MAX_RECORD`] fits, with every double
/// quote doubled (csvlog) or escaped (jsonlog) and the record's other fields.
const MAX_LINE: usize = 2 * MAX_RECORD + (64 << 10);

/// PostgreSQL's default `log_line_prefix` since version 10.
pub const DEFAULT_LINE_PREFIX: &str = "%m [%p] ";

/// The format a log was written in, as `log_destination` names it.
#[derive(Debug, Clone)]
pub enum Format {
    Csv,
    Json,
    /// Plain text lines, each record starting with the server's `log_line_prefix`.
    Stderr(Prefix),
}

impl Format {
    /// The format named `name` (`csvlog`, `jsonlog`, `stderr`, or `csv`, `json`); `line_prefix`
    /// is only read for `stderr`.
    pub fn parse(name: &str, line_prefix: &str) -> Result<Format, String> {
        match name {
            "csvlog" | "csv" => Ok(Format::Csv),
            "jsonlog" | "json" => Ok(Format::Json),
            "stderr" => Prefix::parse(line_prefix).map(Format::Stderr),
            other => Err(format!(
                "unknown log format '{other}' (expected csvlog, jsonlog or stderr)"
            )),
        }
    }
}

/// One statement the application sent, as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line of the file where the statement's record starts.
    pub line: usize,
    /// csvlog/jsonlog `session_id`; stderr: `%c` when the prefix has it, else `%p`, else `None`.
    pub session: Option<String>,
    /// `application_name` when the format carries it (csvlog, jsonlog, `%a` in the prefix).
    pub application: Option<String>,
    /// `None` when the format does not carry it (`%d`/`%u` not in the prefix) or it was empty.
    pub database: Option<String>,
    pub user: Option<String>,
    /// The statement text as logged, lines and all. For [`Protocol::SqlExecute`] it is the
    /// prepared query (what follows `AS` in the `PREPARE`).
    pub text: String,
    /// `$1`, `$2`, … in order; `None` is NULL. Empty for a simple query.
    pub params: Vec<Option<String>>,
    /// False when a value was cut by `log_parameter_max_length` (it ends in `...`) or the text
    /// has a `$n` that no value was logged for.
    pub params_complete: bool,
    pub protocol: Protocol,
}

/// How the statement reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A simple query: the text is the whole statement, no parameters.
    Simple,
    /// Parse/Bind/Execute with parameters bound separately.
    Extended,
    /// `EXECUTE name(args)` of an SQL-level `PREPARE`; the arguments are the parameters.
    SqlExecute,
}

/// A log that cannot be read at all: the caller reports `FILE:LINE: message` and gives up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LogError {}

/// Streams a server log into [`Entry`] values.
///
/// A record that is not in the named format is counted ([`Reader::unreadable`]) and skipped; the
/// iterator stops with a [`LogError`] only when the file as a whole cannot be this format (its
/// first record does not read), holds binary data, or ends inside a record.
pub struct Reader<R: BufRead> {
    source: Lines<R>,
    format: Format,
    /// stderr: the message whose DETAIL lines may still follow.
    open: Option<Message>,
    /// Entries made and not yet handed out (one message can hold several statements).
    ready: VecDeque<Entry>,
    prepared: Prepared,
    /// Each statement text seen lately: the highest `$n` it holds, or `None` when it uses
    /// SQL-level prepared statements (read statement by statement).
    plain: Remembered<Option<usize>>,
    /// A part of a file ([`Reader::part`]): the record starting at or past this offset is not
    /// read, and where it starts is kept in `stopped_at`.
    stop_at: Option<u64>,
    stopped_at: Option<u64>,
    /// Whether a statement used SQL-level prepared statements, whose `EXECUTE` needs the
    /// `PREPARE` before it (a part of a file may not hold it).
    sql_level: bool,
    seen_record: bool,
    done: bool,
    unreadable: usize,
    oversized: usize,
    records: usize,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `input`, a whole log file from its first line (line numbers count from it).
    pub fn new(input: R, format: Format) -> Self {
        Reader {
            source: Lines {
                input,
                number: 0,
                offset: 0,
                peeked: None,
            },
            format,
            open: None,
            ready: VecDeque::new(),
            prepared: Prepared::default(),
            plain: Remembered::default(),
            stop_at: None,
            stopped_at: None,
            sql_level: false,
            seen_record: false,
            done: false,
            unreadable: 0,
            oversized: 0,
            records: 0,
        }
    }

    /// A reader of part of a file: `input` begins at a record's first line, in the middle of the
    /// file (a stray line there is counted, never fatal), and the reader ends before the first
    /// record that starts `length` bytes or more after it. Line numbers count from the part's
    /// first line.
    pub fn part(input: R, format: Format, length: u64) -> Self {
        let mut reader = Reader::new(input, format);
        reader.seen_record = true;
        reader.stop_at = Some(length);
        reader
    }

    /// Stops before the first record that starts `length` bytes or more into the input (the
    /// first part of a file split in parts, which is read as a whole file is).
    pub fn stop_before(&mut self, length: u64) {
        self.stop_at = Some(length);
    }

    /// For a part: where the record it did not read begins (bytes from the part's start), or
    /// `None` when it read to the end of the file.
    pub fn stopped_at(&self) -> Option<u64> {
        self.stopped_at
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.source.number
    }

    /// Whether any statement used SQL-level prepared statements (`PREPARE`, `EXECUTE`,
    /// `DEALLOCATE` in the statement's text).
    pub fn saw_sql_level(&self) -> bool {
        self.sql_level
    }

    /// Whether `line`, about to begin a record, is past the part's end: the reader stops
    /// before it (not counting it among the lines read).
    fn past_end(&mut self, line: &Line) -> bool {
        match self.stop_at {
            Some(stop) if line.start >= stop => {
                self.stopped_at = Some(line.start);
                self.source.number -= 1;
                self.done = true;
                true
            }
            _ => false,
        }
    }

    /// Statements left out so far because their log record is over [`MAX_RECORD`].
    pub fn oversized(&self) -> usize {
        self.oversized
    }

    /// Records skipped so far because they could not be read: stray lines, cut records, an
    /// `EXECUTE` of a name never prepared.
    pub fn unreadable(&self) -> usize {
        self.unreadable
    }

    /// Log messages read so far, of any kind (a stderr message with its DETAIL lines is one).
    pub fn records(&self) -> usize {
        self.records
    }

    fn next_message(&mut self) -> Result<Option<Message>, LogError> {
        match self.format {
            Format::Csv => self.next_csv(),
            Format::Json => self.next_json(),
            Format::Stderr(_) => self.next_stderr(),
        }
    }

    /// A record that does not read: fatal when nothing has read yet (the file is in another
    /// format), counted otherwise.
    fn stray(&mut self, line: usize, not_format: impl FnOnce() -> String) -> Result<(), LogError> {
        if !self.seen_record {
            return Err(LogError {
                line,
                message: not_format(),
            });
        }
        self.unreadable += 1;
        Ok(())
    }

    fn next_csv(&mut self) -> Result<Option<Message>, LogError> {
        while let Some(line) = self.source.next_line()? {
            if self.past_end(&line) {
                return Ok(None);
            }
            if line.text.is_empty() {
                continue;
            }
            let number = line.number;
            if !starts_with_timestamp(&line.text) {
                self.stray(number, || csv_not_format(number))?;
                continue;
            }
            let (fields, oversized) = read_csv_record(&mut self.source, line)?;
            // A record cut at the cap lacks its last fields; it is read to its end all the same.
            if fields.len() < CSV_COLUMNS_MIN && !oversized {
                self.stray(number, || csv_not_format(number))?;
                continue;
            }
            self.seen_record = true;
            self.records += 1;
            let mut message = Message::from_csv(number, fields);
            message.oversized = oversized;
            return Ok(Some(message));
        }
        Ok(None)
    }

    fn next_json(&mut self) -> Result<Option<Message>, LogError> {
        while let Some(line) = self.source.next_line()? {
            if self.past_end(&line) {
                return Ok(None);
            }
            if line.text.trim().is_empty() {
                continue;
            }
            let number = line.number;
            if line.dropped > 0 && line.text.trim_start().starts_with('{') {
                self.seen_record = true;
                self.records += 1;
                return Ok(Some(Message::oversized_json(number, &line.text)));
            }
            match serde_json::from_str::<JsonRecord>(&line.text) {
                Ok(record) => {
                    self.seen_record = true;
                    self.records += 1;
                    return Ok(Some(Message::from_json(number, record)));
                }
                Err(_) if line.text.trim_start().starts_with('{') && self.source.at_end()? => {
                    return Err(LogError {
                        line: number,
                        message: "truncated: the last line is not a complete JSON object".into(),
                    });
                }
                Err(_) => self.stray(number, || {
                    format!(
                        "line {number} is not a jsonlog record (is this a csvlog or stderr file?)"
                    )
                })?,
            }
        }
        Ok(None)
    }

    /// Reads lines until the message after the open one starts, then hands out the open one.
    fn next_stderr(&mut self) -> Result<Option<Message>, LogError> {
        let Format::Stderr(prefix) = &self.format else {
            return Ok(None);
        };
        while let Some(line) = self.source.next_line()? {
            if line.text.is_empty() && line.ended {
                continue;
            }
            // elog.c puts a tab after every newline inside a message.
            if let Some(more) = line.text.strip_prefix('\t') {
                match &mut self.open {
                    Some(open) => {
                        open.continue_with(more, !line.ended);
                        open.oversized |= line.dropped > 0;
                    }
                    None => self.unreadable += 1,
                }
                continue;
            }
            let Some(head) = prefix.read(&line.text) else {
                if !self.seen_record {
                    return Err(LogError {
                        line: line.number,
                        message: format!(
                            "line {} does not start with log_line_prefix '{}' (is this a csvlog \
                             or jsonlog file, or was the server's log_line_prefix different? \
                             pass it with --log-line-prefix)",
                            line.number, prefix.source
                        ),
                    });
                }
                self.unreadable += 1;
                continue;
            };
            self.seen_record = true;
            if SECONDARY.contains(&head.severity) {
                // A DETAIL of another session, or with no message before it, has nothing to add to.
                if let Some(open) = &mut self.open
                    && open.session.as_deref() == head.session()
                {
                    open.add_secondary(head.severity, head.message, !line.ended);
                    open.oversized |= line.dropped > 0;
                }
                continue;
            }
            self.records += 1;
            let mut message = Message::from_head(line.number, &head, !line.ended);
            message.oversized = line.dropped > 0;
            if let Some(done) = self.open.replace(message) {
                return Ok(Some(done));
            }
        }
        Ok(self.open.take())
    }

    /// The entries one message makes: none for most, one for a statement, one per statement for
    /// a simple query string that mixes `PREPARE`/`EXECUTE` with others.
    fn interpret(&mut self, message: Message) {
        if message.severity != "LOG" {
            return;
        }
        let session = message.session.clone().unwrap_or_default();
        let Some((protocol, text)) = logged_statement(&message.text) else {
            if message.text.starts_with("disconnection: ") {
                self.prepared.forget_session(&session);
            }
            return;
        };
        let size = message.text.len() + message.detail.as_ref().map_or(0, String::len);
        if message.oversized || size > MAX_RECORD {
            // Read past and not kept whole, or kept whole and over the cap all the same.
            self.oversized += 1;
            return;
        }
        if message.cut {
            // The last line of the file lacks its newline: the statement may be cut short.
            self.unreadable += 1;
            return;
        }
        // A log repeats the same few texts: what lexing one finds is remembered by text.
        let placeholders = match self.plain.get(text) {
            Some(known) => *known,
            None => {
                let sql_level = split_statements(text).iter().any(|s| {
                    parse_prepare(s).is_some()
                        || parse_execute(s).is_some()
                        || parse_deallocate(s).is_some()
                });
                let known = (!sql_level).then(|| max_placeholder(text));
                self.plain.remember(text, known);
                known
            }
        };
        if let Some(placeholders) = placeholders {
            let (params, complete) = match protocol {
                Protocol::Extended => message
                    .detail
                    .as_deref()
                    .and_then(parse_parameters)
                    .unwrap_or((Vec::new(), true)),
                _ => (Vec::new(), true),
            };
            let complete = complete && params.len() >= placeholders;
            let entry = message.entry(text.to_owned(), params, complete, protocol);
            self.ready.push_back(entry);
            return;
        }
        self.sql_level = true;
        for statement in split_statements(text) {
            self.interpret_sql(&message, &session, statement, protocol);
        }
    }

    /// One statement of a message that uses SQL-level prepared statements.
    fn interpret_sql(&mut self, message: &Message, session: &str, sql: &str, protocol: Protocol) {
        if let Some((name, query)) = parse_prepare(sql) {
            self.prepared.remember(session, name, query.to_owned());
            return;
        }
        if let Some(name) = parse_deallocate(sql) {
            self.prepared.forget(session, name.as_deref());
        }
        let Some((name, args)) = parse_execute(sql) else {
            let entry = message.entry(sql.trim().to_owned(), Vec::new(), true, protocol);
            self.ready.push_back(entry);
            return;
        };
        let from_detail = message
            .detail
            .as_deref()
            .and_then(|d| d.strip_prefix("prepare: "))
            .and_then(|d| {
                let mut prepares = split_statements(d).into_iter().filter_map(parse_prepare);
                prepares.find(|(prepared, _)| *prepared == name)
            })
            .map(|(_, query)| query.to_owned());
        let Some(query) = from_detail.or_else(|| self.prepared.get(session, &name)) else {
            self.unreadable += 1;
            return;
        };
        let params: Vec<Option<String>> = args.iter().map(|a| argument_value(a)).collect();
        let complete = params.len() >= max_placeholder(&query);
        let entry = message.entry(query, params, complete, Protocol::SqlExecute);
        self.ready.push_back(entry);
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Entry, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                return Some(Ok(entry));
            }
            if self.done {
                return None;
            }
            match self.next_message() {
                Ok(Some(message)) => self.interpret(message),
                Ok(None) => self.done = true,
                Err(error) => {
                    self.done = true;
                    self.ready.clear();
                    return Some(Err(error));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lines

/// The file's lines, numbered, checked for binary data, with one line of lookahead.
struct Lines<R> {
    input: R,
    number: usize,
    /// Bytes read so far, from where the reader began.
    offset: u64,
    peeked: Option<Line>,
}

struct Line {
    number: usize,
    /// Where the line begins, in bytes from where the reader began.
    start: u64,
    /// Without its newline.
    text: String,
    /// False for a last line that stops without a newline: PostgreSQL ends every record with
    /// one, so this is a file cut while it was written.
    ended: bool,
    /// Bytes of the line read past and not kept (beyond [`MAX_LINE`]).
    dropped: usize,
    /// Double quotes among them.
    dropped_quotes: usize,
}

impl<R: BufRead> Lines<R> {
    /// The next line, of which at most [`MAX_LINE`] bytes are kept: the rest is read past,
    /// counted in [`Line::dropped`] (and its double quotes, which a csvlog record's end depends
    /// on, in [`Line::dropped_quotes`]), so a line of any length costs no more memory than that.
    // Long because it is one pass over the bytes of a line with every check a line needs: the
    // cap and what is read past it, the line's end, NUL bytes, the cut inside a character, UTF-8.
    fn next_line(&mut self) -> Result<Option<Line>, LogError> {
        if let Some(line) = self.peeked.take() {
            return Ok(Some(line));
        }
        let number = self.number + 1;
        let start = self.offset;
        let unreadable = |e: std::io::Error| LogError {
            line: number,
            message: format!("cannot read: {e}"),
        };
        let mut bytes = Vec::new();
        let (mut read, mut ended) = (0usize, false);
        let (mut dropped, mut dropped_quotes, mut nul) = (0usize, 0usize, false);
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(unreadable(e)),
            };
            if buf.is_empty() {
                break;
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let chunk = &buf[..newline.map_or(buf.len(), |at| at + 1)];
            let keep = MAX_LINE.saturating_sub(bytes.len()).min(chunk.len());
            bytes.extend_from_slice(&chunk[..keep]);
            let rest = &chunk[keep..];
            dropped += rest.len();
            dropped_quotes += rest.iter().filter(|&&b| b == b'"').count();
            nul |= rest.contains(&0);
            let used = chunk.len();
            read += used;
            self.input.consume(used);
            if newline.is_some() {
                ended = true;
                break;
            }
        }
        if read == 0 {
            return Ok(None);
        }
        self.number = number;
        self.offset += read as u64;
        if ended {
            if dropped > 0 {
                dropped -= 1;
            } else {
                bytes.pop();
                // A server on Windows writes its log in text mode: every newline became CR LF.
                if bytes.last() == Some(&b'\r') {
                    bytes.pop();
                }
            }
        }
        if nul || bytes.contains(&0) {
            return Err(LogError {
                line: number,
                message: "binary data (a NUL byte): this is not a text log".into(),
            });
        }
        if dropped > 0 {
            // The cut may fall inside a character: what is kept ends at the last whole one.
            if let Err(e) = std::str::from_utf8(&bytes)
                && e.error_len().is_none()
            {
                dropped += bytes.len() - e.valid_up_to();
                bytes.truncate(e.valid_up_to());
            }
        }
        let text = String::from_utf8(bytes).map_err(|_| LogError {
            line: number,
            message: "not valid UTF-8 (binary data, or a log written in another encoding)".into(),
        })?;
        Ok(Some(Line {
            number,
            start,
            text,
            ended,
            dropped,
            dropped_quotes,
        }))
    }

    /// Whether the line just read was the last.
    fn at_end(&mut self) -> Result<bool, LogError> {
        if self.peeked.is_none() {
            self.peeked = self.next_line()?;
        }
        Ok(self.peeked.is_none())
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

/// One log message in whichever format: the fields statements need.
struct Message {
    line: usize,
    session: Option<String>,
    application: Option<String>,
    database: Option<String>,
    user: Option<String>,
    severity: String,
    text: String,
    detail: Option<String>,
    /// The message ran into the end of a file cut mid-line.
    cut: bool,
    /// The record is over [`MAX_RECORD`]: what is kept is its start only.
    oversized: bool,
    /// stderr: which part the next tab-indented line continues.
    last: Part,
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Text,
    Detail,
    Other,
}

/// csvlog columns (PostgreSQL 13 writes 24, 14 and later 26).
const CSV_USER: usize = 1;
const CSV_DATABASE: usize = 2;
const CSV_SESSION: usize = 5;
const CSV_SEVERITY: usize = 11;
const CSV_MESSAGE: usize = 13;
const CSV_DETAIL: usize = 14;
const CSV_APPLICATION: usize = 22;
const CSV_COLUMNS_MIN: usize = 23;

/// The jsonlog keys statements need; the server leaves out a key whose value is empty.
#[derive(Deserialize)]
struct JsonRecord {
    user: Option<String>,
    dbname: Option<String>,
    session_id: Option<String>,
    error_severity: Option<String>,
    message: Option<String>,
    detail: Option<String>,
    application_name: Option<String>,
}

impl Message {
    fn from_csv(line: usize, mut fields: Vec<String>) -> Message {
        let mut take = |i: usize| {
            fields
                .get_mut(i)
                .map(std::mem::take)
                .filter(|value| !value.is_empty())
        };
        Message {
            line,
            user: take(CSV_USER),
            database: take(CSV_DATABASE),
            session: take(CSV_SESSION),
            severity: take(CSV_SEVERITY).unwrap_or_default(),
            text: take(CSV_MESSAGE).unwrap_or_default(),
            detail: take(CSV_DETAIL),
            application: take(CSV_APPLICATION),
            cut: false,
            oversized: false,
            last: Part::Other,
        }
    }

    fn from_json(line: usize, record: JsonRecord) -> Message {
        let present = |value: Option<String>| value.filter(|v| !v.is_empty());
        Message {
            line,
            session: present(record.session_id),
            application: present(record.application_name),
            database: present(record.dbname),
            user: present(record.user),
            severity: record.error_severity.unwrap_or_default(),
            text: record.message.unwrap_or_default(),
            detail: record.detail,
            cut: false,
            oversized: false,
            last: Part::Other,
        }
    }

    fn from_head(line: usize, head: &Head<'_>, cut: bool) -> Message {
        Message {
            line,
            session: head.session().map(str::to_owned),
            application: known(head.application),
            database: known(head.database),
            user: known(head.user),
            severity: head.severity.to_owned(),
            text: head.message.to_owned(),
            detail: None,
            cut,
            oversized: false,
            last: Part::Text,
        }
    }

    /// A jsonlog line over [`MAX_LINE`], kept in part only (not JSON then): its severity and
    /// the start of its message, enough to know whether it logged a statement.
    fn oversized_json(line: usize, head: &str) -> Message {
        let value_of = |key: &str| {
            let at = head.find(&format!("\"{key}\":\""))? + key.len() + 4;
            let value = &head[at..];
            Some(value[..value.find('"').unwrap_or(value.len())].to_owned())
        };
        Message {
            line,
            session: None,
            application: None,
            database: None,
            user: None,
            severity: value_of("error_severity").unwrap_or_default(),
            text: value_of("message").unwrap_or_default(),
            detail: None,
            cut: false,
            oversized: true,
            last: Part::Other,
        }
    }

    /// A tab-indented stderr line: the next line of the part last begun.
    fn continue_with(&mut self, more: &str, cut: bool) {
        let part = match self.last {
            Part::Text => Some(&mut self.text),
            Part::Detail => self.detail.as_mut(),
            Part::Other => None,
        };
        if let Some(part) = part {
            if part.len() + more.len() >= MAX_RECORD {
                self.oversized = true;
            } else {
                part.push('\n');
                part.push_str(more);
            }
        }
        self.cut |= cut;
    }

    fn add_secondary(&mut self, severity: &str, text: &str, cut: bool) {
        if severity == "DETAIL" {
            self.detail = Some(text.to_owned());
            self.last = Part::Detail;
        } else {
            self.last = Part::Other;
        }
        self.cut |= cut;
    }

    fn entry(
        &self,
        text: String,
        params: Vec<Option<String>>,
        params_complete: bool,
        protocol: Protocol,
    ) -> Entry {
        Entry {
            line: self.line,
            session: self.session.clone(),
            application: self.application.clone(),
            database: self.database.clone(),
            user: self.user.clone(),
            text,
            params,
            params_complete,
            protocol,
        }
    }
}

/// A prefix field's value; the server writes `[unknown]` for a user, database or application not
/// known yet (during authentication).
fn known(value: Option<&str>) -> Option<String> {
    value
        .filter(|v| !v.is_empty() && *v != "[unknown]")
        .map(str::to_owned)
}

fn csv_not_format(line: usize) -> String {
    format!(
        "line {line} is not a csvlog record (expected {CSV_COLUMNS_MIN} to 26 comma-separated \
         columns starting with a timestamp; is this a stderr or jsonlog file?)"
    )
}

/// Whether a line (its bytes, newline included) could begin a csvlog record: it starts with
/// the record's timestamp.
pub fn begins_csv_record(line: &[u8]) -> bool {
    date_time_end(line, 0).is_some()
}

/// `YYYY-MM-DD HH:MM:SS`, how every csvlog record begins.
fn starts_with_timestamp(text: &str) -> bool {
    date_time_end(text.as_bytes(), 0).is_some()
}

/// One csvlog record from its first line on, reading more lines while a quoted field is open.
fn read_csv_record<R: BufRead>(
    source: &mut Lines<R>,
    first: Line,
) -> Result<(Vec<String>, bool), LogError> {
    let start = first.number;
    let truncated = || LogError {
        line: start,
        message: "truncated: a quoted field opened here never closes".into(),
    };
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    // Over MAX_RECORD, characters are no longer kept; quotes and commas are still followed, so
    // the record is read to its true end.
    let (mut kept, mut oversized) = (0usize, false);
    let mut line = first;
    loop {
        let (text, bytes) = (line.text.as_str(), line.text.as_bytes());
        let mut at = 0;
        while at < bytes.len() {
            // Quoted: everything to the next double quote; else to the next quote or comma.
            let next = if quoted {
                bytes[at..].iter().position(|&b| b == b'"')
            } else {
                bytes[at..].iter().position(|&b| b == b'"' || b == b',')
            };
            let Some(n) = next else {
                keep(&mut kept, &mut field, &text[at..]);
                break;
            };
            keep(&mut kept, &mut field, &text[at..at + n]);
            at += n;
            match (quoted, bytes[at]) {
                (true, _) if bytes.get(at + 1) == Some(&b'"') => {
                    keep(&mut kept, &mut field, "\"");
                    at += 2;
                }
                (true, _) => {
                    quoted = false;
                    at += 1;
                }
                (false, b'"') => {
                    quoted = true;
                    at += 1;
                }
                (false, _) => {
                    fields.push(std::mem::take(&mut field));
                    at += 1;
                }
            }
        }
        if line.dropped > 0 {
            // Each double quote turns quoting on or off (a doubled one twice), so the parity of
            // those read past says whether the record goes on.
            oversized = true;
            if line.dropped_quotes % 2 == 1 {
                quoted = !quoted;
            }
        }
        if !quoted {
            fields.push(field);
            return Ok((fields, oversized || kept > MAX_RECORD));
        }
        if !line.ended {
            return Err(truncated());
        }
        keep(&mut kept, &mut field, "\n");
        line = source.next_line()?.ok_or_else(truncated)?;
    }
}

/// Keeps `text` in `field` as far as [`MAX_RECORD`] allows (a character is kept when it ends
/// within it), counting in `kept` every byte, kept or not.
fn keep(kept: &mut usize, field: &mut String, text: &str) {
    let room = MAX_RECORD.saturating_sub(*kept);
    *kept += text.len();
    if text.len() <= room {
        field.push_str(text);
    } else {
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        field.push_str(&text[..end]);
    }
}

// ---------------------------------------------------------------------------------------------
// log_line_prefix

/// A parsed `log_line_prefix`, which reads the fields back from a stderr line.
#[derive(Debug, Clone)]
pub struct Prefix {
    source: String,
    items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
enum Item {
    Literal(String),
    Field {
        field: Field,
        padded: bool,
    },
    /// `%q`: processes without a session stop the prefix here.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Application,
    User,
    Database,
    RemoteHostPort,
    RemoteHost,
    BackendType,
    Pid,
    LeaderPid,
    Time,
    TimeMs,
    Epoch,
    CommandTag,
    SqlState,
    Session,
    LineNumber,
    SessionStart,
    Vxid,
    Xid,
    QueryId,
}

/// The severities elog.c writes (in English), and which of them continue a message.
const SEVERITIES: [&str; 20] = [
    "LOG",
    "DETAIL",
    "STATEMENT",
    "ERROR",
    "HINT",
    "CONTEXT",
    "WARNING",
    "NOTICE",
    "INFO",
    "FATAL",
    "PANIC",
    "QUERY",
    "LOCATION",
    "BACKTRACE",
    "DEBUG",
    "DEBUG1",
    "DEBUG2",
    "DEBUG3",
    "DEBUG4",
    "DEBUG5",
];
const SECONDARY: [&str; 7] = [
    "DETAIL",
    "HINT",
    "QUERY",
    "CONTEXT",
    "LOCATION",
    "STATEMENT",
    "BACKTRACE",
];

/// Free text (`%a`, `%u`, `%r`, …) is never longer than this: names are at most 63 bytes and a
/// host name 1025. The bound keeps a stray long line from costing a search over all of it.
const MAX_FREE_TEXT: usize = 1100;

/// How many steps the prefix search may take on one line before it gives the line up.
const SEARCH_BUDGET: usize = 20_000;

impl Prefix {
    /// Parses `log_line_prefix` the way elog.c reads it: `%` escapes with optional padding
    /// (`%-10u`, `%10p`), `%%` for a percent sign, a lone `%` at the end ignored.
    pub fn parse(source: &str) -> Result<Prefix, String> {
        let mut items = Vec::new();
        let mut literal = String::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            chars.next_if_eq(&'-');
            let mut padded = false;
            while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                padded |= digit != '0';
            }
            let Some(escape) = chars.next() else { break };
            let item = match escape {
                '%' => {
                    literal.push('%');
                    continue;
                }
                'q' => Item::Stop,
                other => Item::Field {
                    field: Field::from_escape(other).ok_or_else(|| {
                        format!("unknown escape %{other} in log_line_prefix '{source}'")
                    })?,
                    padded,
                },
            };
            if !literal.is_empty() {
                items.push(Item::Literal(std::mem::take(&mut literal)));
            }
            items.push(item);
        }
        if !literal.is_empty() {
            items.push(Item::Literal(literal));
        }
        Ok(Prefix {
            source: source.to_owned(),
            items,
        })
    }

    /// The prefix as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Reads a record's first line: its prefix fields, severity and message. Where free text
    /// allows several splits the shortest fields win, and only a split followed by
    /// `SEVERITY:  ` counts.
    fn read<'a>(&self, line: &'a str) -> Option<Head<'a>> {
        let mut head = Head::default();
        let mut budget = SEARCH_BUDGET;
        let (severity, message) = self.walk(0, line, 0, &mut head, &mut budget)?;
        head.severity = severity;
        head.message = message;
        Some(head)
    }

    /// Matches items from `index` on at byte `pos`; on success fills `head` on the way back up,
    /// so a failed branch leaves nothing behind.
    fn walk<'a>(
        &self,
        index: usize,
        line: &'a str,
        pos: usize,
        head: &mut Head<'a>,
        budget: &mut usize,
    ) -> Option<(&'a str, &'a str)> {
        *budget = budget.checked_sub(1)?;
        let rest = line.get(pos..)?;
        let Some(item) = self.items.get(index) else {
            return severity(rest);
        };
        match item {
            Item::Literal(text) => {
                let next = pos + rest.strip_prefix(text.as_str()).map(|_| text.len())?;
                self.walk(index + 1, line, next, head, budget)
            }
            Item::Stop => severity(rest).or_else(|| self.walk(index + 1, line, pos, head, budget)),
            Item::Field { field, padded } => {
                let spaces = if *padded { leading_spaces(rest) } else { 0 };
                // Padding puts spaces before (`%10p`) or after (`%-10p`) the value.
                for skip in (0..=spaces).rev() {
                    let start = pos + skip;
                    let found = field_ends(*field, line, start, |end| {
                        let trailing = if *padded {
                            leading_spaces(&line[end..])
                        } else {
                            0
                        };
                        (0..=trailing).find_map(|t| {
                            let found = self.walk(index + 1, line, end + t, head, budget)?;
                            head.set(*field, line[start..end].trim());
                            Some(found)
                        })
                    });
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
        }
    }
}

impl Field {
    fn from_escape(escape: char) -> Option<Field> {
        Some(match escape {
            'a' => Field::Application,
            'u' => Field::User,
            'd' => Field::Database,
            'r' => Field::RemoteHostPort,
            'h' => Field::RemoteHost,
            'b' => Field::BackendType,
            'p' => Field::Pid,
            'P' => Field::LeaderPid,
            't' => Field::Time,
            'm' => Field::TimeMs,
            'n' => Field::Epoch,
            'i' => Field::CommandTag,
            'e' => Field::SqlState,
            'c' => Field::Session,
            'l' => Field::LineNumber,
            's' => Field::SessionStart,
            'v' => Field::Vxid,
            'x' => Field::Xid,
            'Q' => Field::QueryId,
            _ => return None,
        })
    }
}

/// What the prefix says about one line.
#[derive(Default)]
struct Head<'a> {
    session: Option<&'a str>,
    pid: Option<&'a str>,
    application: Option<&'a str>,
    database: Option<&'a str>,
    user: Option<&'a str>,
    severity: &'a str,
    message: &'a str,
}

impl<'a> Head<'a> {
    fn set(&mut self, field: Field, value: &'a str) {
        let slot = match field {
            Field::Session => &mut self.session,
            Field::Pid => &mut self.pid,
            Field::Application => &mut self.application,
            Field::Database => &mut self.database,
            Field::User => &mut self.user,
            _ => return,
        };
        *slot = Some(value);
    }

    /// `%c` identifies a session; without it `%p` does, until the pid is reused.
    fn session(&self) -> Option<&'a str> {
        self.session.or(self.pid).filter(|s| !s.is_empty())
    }
}

/// `SEVERITY:  message` at the start of `rest`.
fn severity(rest: &str) -> Option<(&str, &str)> {
    let colon = rest.bytes().take(16).position(|b| b == b':')?;
    let word = &rest[..colon];
    let message = rest[colon..].strip_prefix(":  ")?;
    SEVERITIES.contains(&word).then_some((word, message))
}

fn leading_spaces(text: &str) -> usize {
    text.bytes().take_while(|&b| b == b' ').count()
}

/// Calls `each` with every place a value of `field` starting at `start` could end, in order of
/// preference, until it answers.
fn field_ends<R>(
    field: Field,
    line: &str,
    start: usize,
    mut each: impl FnMut(usize) -> Option<R>,
) -> Option<R> {
    let bytes = line.as_bytes();
    match field {
        Field::Time | Field::SessionStart => zone_ends(line, date_time_end(bytes, start)?, each),
        Field::TimeMs => {
            let end = date_time_end(bytes, start)?;
            let end = digits_exactly(bytes, end + 1, 3).filter(|_| bytes[end] == b'.')?;
            zone_ends(line, end, each)
        }
        Field::Epoch => {
            let end = digits(bytes, start)?;
            let end = digits_exactly(bytes, end + 1, 3).filter(|_| bytes[end] == b'.')?;
            each(end)
        }
        Field::Pid | Field::LineNumber | Field::Xid => each(digits(bytes, start)?),
        Field::QueryId => {
            let sign = usize::from(bytes.get(start) == Some(&b'-'));
            each(digits(bytes, start + sign)?)
        }
        // Written only by parallel workers, and by backends with a transaction slot.
        Field::LeaderPid => digits(bytes, start)
            .and_then(&mut each)
            .or_else(|| each(start)),
        Field::Vxid => vxid_end(bytes, start)
            .and_then(&mut each)
            .or_else(|| each(start)),
        Field::Session => {
            let dot = start
                + bytes
                    .get(start..)?
                    .iter()
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
            let end = dot
                + 1
                + bytes
                    .get(dot + 1..)?
                    .iter()
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
            (dot > start && bytes.get(dot) == Some(&b'.') && end > dot + 1).then_some(())?;
            each(end)
        }
        Field::SqlState => {
            let code = bytes.get(start..start + 5)?;
            code.iter()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
                .then_some(())?;
            each(start + 5)
        }
        Field::Application
        | Field::User
        | Field::Database
        | Field::RemoteHostPort
        | Field::RemoteHost
        | Field::BackendType
        | Field::CommandTag => {
            let ends = line.get(start..)?.char_indices().map(|(i, _)| start + i);
            ends.chain([line.len()])
                .take_while(|end| end - start <= MAX_FREE_TEXT)
                .find_map(each)
        }
    }
}

/// The end of `YYYY-MM-DD HH:MM:SS` at `start`.
fn date_time_end(bytes: &[u8], start: usize) -> Option<usize> {
    const SHAPE: &[u8] = b"0000-00-00 00:00:00";
    let text = bytes.get(start..start + SHAPE.len())?;
    let fits = text.iter().zip(SHAPE).all(|(&b, &s)| match s {
        b'0' => b.is_ascii_digit(),
        _ => b == s,
    });
    fits.then_some(start + SHAPE.len())
}

/// A space and a time zone abbreviation (`UTC`, `CET`, `+03`) after a timestamp; the shortest
/// first, so a prefix such as `%t[%p]` still finds its bracket.
fn zone_ends<R>(line: &str, end: usize, mut each: impl FnMut(usize) -> Option<R>) -> Option<R> {
    let zone = line.get(end..)?.strip_prefix(' ')?;
    let start = end + 1;
    zone.char_indices()
        .take_while(|(_, c)| !c.is_whitespace())
        .find_map(|(i, c)| each(start + i + c.len_utf8()))
}

fn digits(bytes: &[u8], start: usize) -> Option<usize> {
    let count = bytes
        .get(start..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (count > 0).then_some(start + count)
}

fn digits_exactly(bytes: &[u8], start: usize, count: usize) -> Option<usize> {
    let text = bytes.get(start..start + count)?;
    text.iter().all(u8::is_ascii_digit).then_some(start + count)
}

/// `3/42` (or `-1/0`): backend slot and local transaction.
fn vxid_end(bytes: &[u8], start: usize) -> Option<usize> {
    let sign = usize::from(bytes.get(start) == Some(&b'-'));
    let slash = digits(bytes, start + sign)?;
    (bytes.get(slash) == Some(&b'/')).then_some(())?;
    digits(bytes, slash + 1)
}

// ---------------------------------------------------------------------------------------------
// What a message says

/// The statement a `LOG` message carries, and how it was sent.
fn logged_statement(message: &str) -> Option<(Protocol, &str)> {
    let rest = match message.strip_prefix("duration: ") {
        // `duration: N ms` alone (log_duration) follows a statement already logged.
        Some(after) => after.split_once(" ms  ")?.1,
        None => message,
    };
    if let Some(text) = rest.strip_prefix("statement: ") {
        return Some((Protocol::Simple, text));
    }
    // `parse NAME:` and `bind NAME:` (log_min_duration_statement) precede the `execute` of the
    // same statement; `execute fetch from` continues a portal already executed.
    let after = rest.strip_prefix("execute ")?;
    if after.starts_with("fetch from ") {
        return None;
    }
    let (_name, text) = after.split_once(": ")?;
    Some((Protocol::Extended, text))
}

/// `parameters: $1 = '5', $2 = NULL` (`Parameters:` from PostgreSQL 16): the values in order,
/// and whether they are all there.
fn parse_parameters(detail: &str) -> Option<(Vec<Option<String>>, bool)> {
    /// PostgreSQL's limit on parameters in one statement.
    const MAX_PARAMS: usize = 65_535;
    // PostgreSQL 16 and later write "Parameters:", earlier versions "parameters:".
    let mut rest = detail
        .strip_prefix("parameters: ")
        .or_else(|| detail.strip_prefix("Parameters: "))?;
    let mut values = Vec::new();
    let mut complete = true;
    loop {
        let Some((number, value, after)) = parameter(rest) else {
            return Some((values, false));
        };
        if value.as_deref().is_some_and(|v| v.ends_with("...")) {
            // log_parameter_max_length cut it and marked the cut with "...".
            complete = false;
        }
        if number == values.len() + 1 {
            values.push(value);
        } else if number > values.len() && number <= MAX_PARAMS {
            values.resize(number - 1, None);
            values.push(value);
            complete = false;
        } else {
            complete = false;
        }
        if after.is_empty() {
            return Some((values, complete));
        }
        match after.strip_prefix(", ") {
            Some(next) => rest = next,
            None => return Some((values, false)),
        }
    }
}

/// `$N = 'value'` or `$N = NULL`, and what follows.
fn parameter(text: &str) -> Option<(usize, Option<String>, &str)> {
    let after_dollar = text.strip_prefix('$')?;
    let end = digits(after_dollar.as_bytes(), 0)?;
    let number = after_dollar[..end].parse().ok()?;
    let value = after_dollar[end..].strip_prefix(" = ")?;
    if let Some(after) = value.strip_prefix("NULL") {
        return Some((number, None, after));
    }
    if !value.starts_with('\'') {
        return None;
    }
    let close = quoted_end(value.as_bytes(), 0)?;
    let literal = value[1..close - 1].replace("''", "'");
    Some((number, Some(literal), &value[close..]))
}

/// An `EXECUTE` argument as a parameter value: NULL, the value of a string literal (`'…'`,
/// `E'…'`, `$$…$$`; optionally cast: `'{1,2}'::int[]` gives `{1,2}`), or else the argument's text as written
/// (`5`, `-1.5`, `now()`).
fn argument_value(argument: &str) -> Option<String> {
    let argument = argument.trim();
    let is_cast = |rest: &str| {
        let rest = rest.trim();
        rest.is_empty()
            || rest.strip_prefix("::").is_some_and(|t| {
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b" _.\"[](),".contains(&b))
            })
    };
    if keyword(argument, "NULL").is_some_and(is_cast) {
        return None;
    }
    if let Some(first) = sql::tokens(argument, DIALECT).into_iter().next()
        && first.kind == TokenKind::String
        && let Some(value) = first.string_value(DIALECT)
        && is_cast(&argument[first.text.len()..])
    {
        return Some(value);
    }
    Some(argument.to_owned())
}

// ---------------------------------------------------------------------------------------------
// SQL-level PREPARE and EXECUTE

/// `PREPARE`d queries by session and name, for an `EXECUTE` logged without its `prepare:` detail.
#[derive(Default)]
struct Prepared {
    sessions: HashMap<String, HashMap<String, String>>,
    count: usize,
}

/// Past this many remembered queries (a client that never deallocates, a log without
/// disconnections) all are forgotten, to keep memory flat; the `prepare:` detail still resolves
/// what follows.
const PREPARED_LIMIT: usize = 100_000;

impl Prepared {
    fn remember(&mut self, session: &str, name: String, query: String) {
        if self.count >= PREPARED_LIMIT {
            self.sessions.clear();
            self.count = 0;
        }
        let names = self.sessions.entry(session.to_owned()).or_default();
        if names.insert(name, query).is_none() {
            self.count += 1;
        }
    }

    fn get(&self, session: &str, name: &str) -> Option<String> {
        self.sessions.get(session)?.get(name).cloned()
    }

    /// `DEALLOCATE name`, or `DEALLOCATE ALL` for `None`.
    fn forget(&mut self, session: &str, name: Option<&str>) {
        let Some(names) = self.sessions.get_mut(session) else {
            return;
        };
        match name {
            Some(name) => self.count -= usize::from(names.remove(name).is_some()),
            None => self.forget_session(session),
        }
    }

    fn forget_session(&mut self, session: &str) {
        if let Some(names) = self.sessions.remove(session) {
            self.count -= names.len();
        }
    }
}

/// `PREPARE name [(types)] AS query`: the name as PostgreSQL keys it and the query.
fn parse_prepare(sql: &str) -> Option<(String, &str)> {
    let rest = keyword(skip_space(sql), "PREPARE")?;
    let (name, rest) = identifier(skip_space(rest))?;
    let mut rest = skip_space(rest);
    if rest.starts_with('(') {
        rest = skip_space(&rest[close_paren(rest)?..]);
    }
    let query = keyword(rest, "AS")?.trim_start();
    (!query.is_empty()).then_some((name, query))
}

/// `EXECUTE name [(arguments)]`: the name and the arguments' texts.
fn parse_execute(sql: &str) -> Option<(String, Vec<&str>)> {
    let rest = keyword(skip_space(sql), "EXECUTE")?;
    let (name, rest) = identifier(skip_space(rest))?;
    let rest = skip_space(rest);
    let (arguments, rest) = if rest.starts_with('(') {
        let close = close_paren(rest)?;
        (split_arguments(&rest[1..close - 1]), &rest[close..])
    } else {
        (Vec::new(), rest)
    };
    let rest = skip_space(rest);
    let rest = skip_space(rest.strip_prefix(';').unwrap_or(rest));
    rest.is_empty().then_some((name, arguments))
}

/// `DEALLOCATE [PREPARE] name|ALL`: `Some(None)` for `ALL`.
fn parse_deallocate(sql: &str) -> Option<Option<String>> {
    let rest = skip_space(keyword(skip_space(sql), "DEALLOCATE")?);
    let rest = keyword(rest, "PREPARE").map_or(rest, skip_space);
    if keyword(rest, "ALL").is_some() {
        return Some(None);
    }
    identifier(rest).map(|(name, _)| Some(name))
}

/// `text` without the leading `keyword` (any case), if it starts with it as a whole word.
fn keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = &text[keyword.len()..];
    let whole = !rest.bytes().next().is_some_and(identifier_byte);
    (head.eq_ignore_ascii_case(keyword) && whole).then_some(rest)
}

/// A name as PostgreSQL stores it (folded to lower case unless double-quoted, truncated to 63
/// bytes), and what follows it.
fn identifier(text: &str) -> Option<(String, &str)> {
    let first = sql::tokens(text, DIALECT).into_iter().next()?;
    let name = first.identifier()?;
    Some((name, &text[first.text.len()..]))
}

fn identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// How capture reads SQL: as the server does with its defaults (`standard_conforming_strings`
/// on). The one lexer of the crate, [`crate::sql`], does the reading.
const DIALECT: sql::Dialect = sql::Dialect {
    standard_conforming_strings: true,
};

/// `text` after leading white space and comments.
fn skip_space(text: &str) -> &str {
    let start = sql::tokens(text, DIALECT)
        .into_iter()
        .find(|t| !t.is_trivia())
        .map_or(text.len(), |t| t.start);
    &text[start..]
}

/// The byte after the `)` closing the `(` that `text` starts with.
fn close_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for t in sql::significant(text, DIALECT) {
        match (t.kind, t.text) {
            (TokenKind::Punct, "(") => depth += 1,
            (TokenKind::Punct, ")") => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(t.start + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Arguments split at the commas outside parentheses, brackets and quotes.
fn split_arguments(text: &str) -> Vec<&str> {
    if skip_space(text).is_empty() {
        return Vec::new();
    }
    let mut arguments = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for t in sql::significant(text, DIALECT) {
        match (t.kind, t.text) {
            (TokenKind::Punct, "(" | "[") => depth += 1,
            (TokenKind::Punct, ")" | "]") => depth = depth.saturating_sub(1),
            (TokenKind::Punct, ",") if depth == 0 => {
                arguments.push(text[start..t.start].trim());
                start = t.start + 1;
            }
            _ => {}
        }
    }
    arguments.push(text[start..].trim());
    arguments
}

/// The statements of a query string, as the server's parser cuts them, each with its `;` and the
/// comments and white space before it; empty ones left out.
fn split_statements(text: &str) -> Vec<&str> {
    let mut start = 0;
    sql::split(text, DIALECT)
        .into_iter()
        .map(|s| {
            let mut end = s.offset + s.text.len();
            let after = &text[end..];
            let spaces = after.len() - after.trim_start().len();
            if after[spaces..].starts_with(';') {
                end += spaces + 1;
            }
            let piece = &text[start..end];
            start = end;
            piece
        })
        .collect()
}

/// The highest `$n` in the text, outside quotes and comments.
fn max_placeholder(text: &str) -> usize {
    sql::highest_param(text, DIALECT).0
}

/// The byte after the quote closing the one at `start` (a doubled quote is part of the text):
/// for the parameter values the server writes in a log line's detail, not SQL.
fn quoted_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
            i += 2;
        } else if b == b'\'' {
            return Some(i + 1);
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    // Excerpts captured from a PostgreSQL 15.18 server (log_destination = 'stderr,csvlog,jsonlog')
    // under psql, pgbench and tokio-postgres traffic. In the stderr excerpts, continuation lines
    // start with a real tab character, as the server writes them.

    /// log_statement = all, log_min_duration_statement = 0, log_line_prefix = '%m [%p] %q%u@%d %a '.
    const STDERR_STATEMENTS: &str = r#"2026-12-01 03:12:58.979 UTC [25530] LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit
2026-12-01 03:12:58.980 UTC [25530] LOG:  listening on Unix socket "/tmp/logprobe/.s.PGSQL.5491"
2026-12-01 03:12:58.982 UTC [25534] LOG:  database system was shut down at 2026-12-01 03:12:57 UTC
2026-12-01 03:12:58.987 UTC [25530] LOG:  database system is ready to accept connections
2026-12-01 03:13:04.505 UTC [25558] postgres@postgres my app LOG:  statement: CREATE TABLE t(id int, name text);
2026-12-01 03:13:04.508 UTC [25558] postgres@postgres my app LOG:  duration: 2.492 ms
2026-12-01 03:13:04.508 UTC [25558] postgres@postgres my app LOG:  statement: SELECT id,
	       name
	  FROM t
	 WHERE id = 1;
2026-12-01 03:13:04.508 UTC [25558] postgres@postgres my app LOG:  duration: 0.494 ms
2026-12-01 03:13:04.508 UTC [25558] postgres@postgres my app LOG:  statement: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  duration: 0.080 ms
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  statement: EXECUTE q(5, 'a,b''c');
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app DETAIL:  prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  duration: 0.111 ms
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  statement: EXECUTE q (6, NULL);
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app DETAIL:  prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  duration: 0.043 ms
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  statement: SELECT 1/0;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app ERROR:  division by zero
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app STATEMENT:  SELECT 1/0;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  statement: SELECT $$it's
	multi$$;
2026-12-01 03:13:04.509 UTC [25558] postgres@postgres my app LOG:  duration: 0.038 ms
2026-12-01 03:13:04.548 UTC [25565] postgres@postgres pgbench LOG:  duration: 0.312 ms  parse P_0: SELECT * FROM t WHERE id = $1
	  AND name <> 'x';
2026-12-01 03:13:04.549 UTC [25565] postgres@postgres pgbench LOG:  duration: 0.186 ms  bind P_0: SELECT * FROM t WHERE id = $1
	  AND name <> 'x';
2026-12-01 03:13:04.549 UTC [25565] postgres@postgres pgbench DETAIL:  parameters: $1 = '1'
2026-12-01 03:13:04.549 UTC [25565] postgres@postgres pgbench LOG:  execute P_0: SELECT * FROM t WHERE id = $1
	  AND name <> 'x';
2026-12-01 03:13:04.549 UTC [25565] postgres@postgres pgbench DETAIL:  parameters: $1 = '1'
2026-12-01 03:13:04.549 UTC [25565] postgres@postgres pgbench LOG:  duration: 0.012 ms
"#;
    const PREFIX_STATEMENTS: &str = "%m [%p] %q%u@%d %a ";

    /// log_min_duration_statement = 0 alone (every statement logged with its duration, parse and
    /// bind included), log_connections, log_disconnections, and a pgbadger-style prefix.
    const STDERR_DURATIONS: &str = r#"2026-12-01 03:18:18 UTC [28358]: [3-1] user=,db=,app=,client= LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit
2026-12-01 03:18:18 UTC [28358]: [4-1] user=,db=,app=,client= LOG:  listening on Unix socket "/tmp/logprobe/.s.PGSQL.5491"
2026-12-01 03:18:18 UTC [28362]: [1-1] user=,db=,app=,client= LOG:  database system was shut down at 2026-12-01 03:18:18 UTC
2026-12-01 03:18:18 UTC [28358]: [5-1] user=,db=,app=,client= LOG:  database system is ready to accept connections
2026-12-01 03:18:20 UTC [28370]: [1-1] user=[unknown],db=[unknown],app=[unknown],client=[local] LOG:  connection received: host=[local]
2026-12-01 03:18:20 UTC [28370]: [2-1] user=postgres,db=postgres,app=[unknown],client=[local] LOG:  connection authorized: user=postgres database=postgres application_name=probe app
2026-12-01 03:18:20 UTC [28370]: [3-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 1.226 ms  parse s0: SELECT id, name
	  FROM t
	 WHERE name = $1 OR name = $2 OR id = $3
2026-12-01 03:18:20 UTC [28370]: [4-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.632 ms  bind s0: SELECT id, name
	  FROM t
	 WHERE name = $1 OR name = $2 OR id = $3
2026-12-01 03:18:20 UTC [28370]: [5-1] user=postgres,db=postgres,app=probe app,client=[local] DETAIL:  parameters: $1 = 'a, ''b''
	c', $2 = NULL, $3 = '7'
2026-12-01 03:18:20 UTC [28370]: [6-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.014 ms  execute s0: SELECT id, name
	  FROM t
	 WHERE name = $1 OR name = $2 OR id = $3
2026-12-01 03:18:20 UTC [28370]: [7-1] user=postgres,db=postgres,app=probe app,client=[local] DETAIL:  parameters: $1 = 'a, ''b''
	c', $2 = NULL, $3 = '7'
2026-12-01 03:18:20 UTC [28370]: [8-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.089 ms  parse s1: SELECT $1::text
2026-12-01 03:18:20 UTC [28370]: [9-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.019 ms  bind s1: SELECT $1::text
2026-12-01 03:18:20 UTC [28370]: [10-1] user=postgres,db=postgres,app=probe app,client=[local] DETAIL:  parameters: $1 = 'plain'
2026-12-01 03:18:20 UTC [28370]: [11-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.004 ms  execute s1: SELECT $1::text
2026-12-01 03:18:20 UTC [28370]: [12-1] user=postgres,db=postgres,app=probe app,client=[local] DETAIL:  parameters: $1 = 'plain'
2026-12-01 03:18:20 UTC [28370]: [13-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  duration: 0.224 ms  statement: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)
2026-12-01 03:18:20 UTC [28370]: [14-1] user=postgres,db=postgres,app=probe app,client=[local] DETAIL:  prepare: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)
2026-12-01 03:18:20 UTC [28370]: [15-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  could not send data to client: Broken pipe
2026-12-01 03:18:20 UTC [28370]: [16-1] user=postgres,db=postgres,app=probe app,client=[local] FATAL:  connection to client lost
2026-12-01 03:18:20 UTC [28370]: [17-1] user=postgres,db=postgres,app=probe app,client=[local] LOG:  disconnection: session time: 0:00:00.014 user=postgres database=postgres host=[local]
"#;
    const PREFIX_DURATIONS: &str = "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ";

    /// Nearly every escape, with padding, from log_statement = all.
    const STDERR_ESCAPES: &str = r#"2026-12-01 03:18:27.398 UTC|1796095107.398|6b0e3c83.6ef6|3|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit
2026-12-01 03:18:27.401 UTC|1796095107.401|6b0e3c83.6ef6|4|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  listening on Unix socket "/tmp/logprobe/.s.PGSQL.5491"
2026-12-01 03:18:27.419 UTC|1796095107.419|6b0e3c83.6efa|1|          |     28410|0||00000|startup||0|2026-12-01 03:18:27 UTC||||| LOG:  database system was shut down at 2026-12-01 03:18:27 UTC
2026-12-01 03:18:27.428 UTC|1796095107.428|6b0e3c83.6ef6|5|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  database system is ready to accept connections
2026-12-01 03:18:28.974 UTC|1796095108.974|6b0e3c84.6f02|1|postgres  |     28418|0|3/3|00000|client backend|SELECT|5929508035182648662|2026-12-01 03:18:28 UTC|[local]||probe app|postgres|[local] % LOG:  execute s0: SELECT id, name
	  FROM t
	 WHERE name = $1 OR name = $2 OR id = $3
2026-12-01 03:18:28.974 UTC|1796095108.974|6b0e3c84.6f02|2|postgres  |     28418|0|3/3|00000|client backend|SELECT|5929508035182648662|2026-12-01 03:18:28 UTC|[local]||probe app|postgres|[local] % DETAIL:  parameters: $1 = 'a, ''b''
	c', $2 = NULL, $3 = '7'
2026-12-01 03:18:28.975 UTC|1796095108.975|6b0e3c84.6f02|3|postgres  |     28418|0|3/5|00000|client backend|SELECT|-2227272355416136119|2026-12-01 03:18:28 UTC|[local]||probe app|postgres|[local] % LOG:  execute s1: SELECT $1::text
2026-12-01 03:18:28.975 UTC|1796095108.975|6b0e3c84.6f02|4|postgres  |     28418|0|3/5|00000|client backend|SELECT|-2227272355416136119|2026-12-01 03:18:28 UTC|[local]||probe app|postgres|[local] % DETAIL:  parameters: $1 = 'plain'
2026-12-01 03:18:28.975 UTC|1796095108.975|6b0e3c84.6f02|5|postgres  |     28418|0|3/6|00000|client backend|idle|0|2026-12-01 03:18:28 UTC|[local]||probe app|postgres|[local] % LOG:  statement: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)
2026-12-01 03:18:29.290 UTC|1796095109.290|6b0e3c83.6ef6|6|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  received fast shutdown request
2026-12-01 03:18:29.291 UTC|1796095109.291|6b0e3c83.6ef6|7|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  aborting any active transactions
2026-12-01 03:18:29.302 UTC|1796095109.302|6b0e3c83.6ef6|8|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  background worker "logical replication launcher" (PID 28413) exited with exit code 1
2026-12-01 03:18:29.302 UTC|1796095109.302|6b0e3c83.6ef8|1|          |     28408|0||00000|checkpointer||0|2026-12-01 03:18:27 UTC||||| LOG:  shutting down
2026-12-01 03:18:29.309 UTC|1796095109.309|6b0e3c83.6ef8|2|          |     28408|0||00000|checkpointer||0|2026-12-01 03:18:27 UTC||||| LOG:  checkpoint starting: shutdown immediate
2026-12-01 03:18:29.365 UTC|1796095109.365|6b0e3c83.6ef8|3|          |     28408|0||00000|checkpointer||0|2026-12-01 03:18:27 UTC||||| LOG:  checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.017 s, sync=0.008 s, total=0.064 s; sync files=2, longest=0.004 s, average=0.004 s; distance=0 kB, estimate=0 kB
2026-12-01 03:18:29.377 UTC|1796095109.377|6b0e3c83.6ef6|9|          |     28406|0||00000|postmaster||0|2026-12-01 03:18:27 UTC||||| LOG:  database system is shut down
"#;
    const PREFIX_ESCAPES: &str = "%m|%n|%c|%l|%-10u|%10p|%x|%v|%e|%b|%i|%Q|%s|%r|%P|%a|%d|%h %q%% ";

    /// The csvlog written beside STDERR_STATEMENTS.
    const CSV_STATEMENTS: &str = r#"2026-12-01 03:12:58.979 UTC,,,25530,,6b0e3b3a.63ba,1,,2026-12-01 03:12:58 UTC,,0,LOG,00000,"starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",,,,,,,,,"","postmaster",,0
2026-12-01 03:12:58.980 UTC,,,25530,,6b0e3b3a.63ba,2,,2026-12-01 03:12:58 UTC,,0,LOG,00000,"listening on Unix socket ""/tmp/logprobe/.s.PGSQL.5491""",,,,,,,,,"","postmaster",,0
2026-12-01 03:12:58.982 UTC,,,25534,,6b0e3b3a.63be,1,,2026-12-01 03:12:58 UTC,,0,LOG,00000,"database system was shut down at 2026-12-01 03:12:57 UTC",,,,,,,,,"","startup",,0
2026-12-01 03:12:58.987 UTC,,,25530,,6b0e3b3a.63ba,3,,2026-12-01 03:12:58 UTC,,0,LOG,00000,"database system is ready to accept connections",,,,,,,,,"","postmaster",,0
2026-12-01 03:13:04.505 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,1,"idle",2026-12-01 03:13:04 UTC,3/2,0,LOG,00000,"statement: CREATE TABLE t(id int, name text);",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.508 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,2,"CREATE TABLE",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 2.492 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.508 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,3,"idle",2026-12-01 03:13:04 UTC,3/3,0,LOG,00000,"statement: SELECT id,
       name
  FROM t
 WHERE id = 1;",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.508 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,4,"SELECT",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 0.494 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.508 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,5,"idle",2026-12-01 03:13:04 UTC,3/4,0,LOG,00000,"statement: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,6,"PREPARE",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 0.080 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,7,"idle",2026-12-01 03:13:04 UTC,3/5,0,LOG,00000,"statement: EXECUTE q(5, 'a,b''c');","prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;",,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,8,"EXECUTE",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 0.111 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,9,"idle",2026-12-01 03:13:04 UTC,3/6,0,LOG,00000,"statement: EXECUTE q (6, NULL);","prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;",,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,10,"EXECUTE",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 0.043 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,11,"idle",2026-12-01 03:13:04 UTC,3/7,0,LOG,00000,"statement: SELECT 1/0;",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,12,"SELECT",2026-12-01 03:13:04 UTC,3/7,0,ERROR,22012,"division by zero",,,,,,"SELECT 1/0;",,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,13,"idle",2026-12-01 03:13:04 UTC,3/8,0,LOG,00000,"statement: SELECT $$it's
multi$$;",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.509 UTC,"postgres","postgres",25558,"[local]",6b0e3b40.63d6,14,"SELECT",2026-12-01 03:13:04 UTC,3/0,0,LOG,00000,"duration: 0.038 ms",,,,,,,,,"my app","client backend",,0
2026-12-01 03:13:04.548 UTC,"postgres","postgres",25565,"[local]",6b0e3b40.63dd,1,"PARSE",2026-12-01 03:13:04 UTC,3/11,0,LOG,00000,"duration: 0.312 ms  parse P_0: SELECT * FROM t WHERE id = $1
  AND name <> 'x';",,,,,,,,,"pgbench","client backend",,0
2026-12-01 03:13:04.549 UTC,"postgres","postgres",25565,"[local]",6b0e3b40.63dd,2,"BIND",2026-12-01 03:13:04 UTC,3/12,0,LOG,00000,"duration: 0.186 ms  bind P_0: SELECT * FROM t WHERE id = $1
  AND name <> 'x';","parameters: $1 = '1'",,,,,,,,"pgbench","client backend",,0
2026-12-01 03:13:04.549 UTC,"postgres","postgres",25565,"[local]",6b0e3b40.63dd,3,"SELECT",2026-12-01 03:13:04 UTC,3/12,0,LOG,00000,"execute P_0: SELECT * FROM t WHERE id = $1
  AND name <> 'x';","parameters: $1 = '1'",,,,,,,,"pgbench","client backend",,0
"#;

    /// The csvlog written beside STDERR_DURATIONS.
    const CSV_DURATIONS: &str = r#"2026-12-01 03:18:18.743 UTC,,,28358,,6b0e3c7a.6ec6,1,,2026-12-01 03:18:18 UTC,,0,LOG,00000,"starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",,,,,,,,,"","postmaster",,0
2026-12-01 03:18:18.745 UTC,,,28358,,6b0e3c7a.6ec6,2,,2026-12-01 03:18:18 UTC,,0,LOG,00000,"listening on Unix socket ""/tmp/logprobe/.s.PGSQL.5491""",,,,,,,,,"","postmaster",,0
2026-12-01 03:18:18.763 UTC,,,28362,,6b0e3c7a.6eca,1,,2026-12-01 03:18:18 UTC,,0,LOG,00000,"database system was shut down at 2026-12-01 03:18:18 UTC",,,,,,,,,"","startup",,0
2026-12-01 03:18:18.776 UTC,,,28358,,6b0e3c7a.6ec6,3,,2026-12-01 03:18:18 UTC,,0,LOG,00000,"database system is ready to accept connections",,,,,,,,,"","postmaster",,0
2026-12-01 03:18:20.309 UTC,,,28370,"[local]",6b0e3c7c.6ed2,1,"",2026-12-01 03:18:20 UTC,,0,LOG,00000,"connection received: host=[local]",,,,,,,,,"","not initialized",,0
2026-12-01 03:18:20.310 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,2,"authentication",2026-12-01 03:18:20 UTC,3/1,0,LOG,00000,"connection authorized: user=postgres database=postgres application_name=probe app",,,,,,,,,"","client backend",,0
2026-12-01 03:18:20.316 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,3,"PARSE",2026-12-01 03:18:20 UTC,3/2,0,LOG,00000,"duration: 1.226 ms  parse s0: SELECT id, name
  FROM t
 WHERE name = $1 OR name = $2 OR id = $3",,,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.317 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,4,"BIND",2026-12-01 03:18:20 UTC,3/3,0,LOG,00000,"duration: 0.632 ms  bind s0: SELECT id, name
  FROM t
 WHERE name = $1 OR name = $2 OR id = $3","parameters: $1 = 'a, ''b''
c', $2 = NULL, $3 = '7'",,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.317 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,5,"SELECT",2026-12-01 03:18:20 UTC,3/3,0,LOG,00000,"duration: 0.014 ms  execute s0: SELECT id, name
  FROM t
 WHERE name = $1 OR name = $2 OR id = $3","parameters: $1 = 'a, ''b''
c', $2 = NULL, $3 = '7'",,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.317 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,6,"PARSE",2026-12-01 03:18:20 UTC,3/4,0,LOG,00000,"duration: 0.089 ms  parse s1: SELECT $1::text",,,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.317 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,7,"BIND",2026-12-01 03:18:20 UTC,3/5,0,LOG,00000,"duration: 0.019 ms  bind s1: SELECT $1::text","parameters: $1 = 'plain'",,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.317 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,8,"SELECT",2026-12-01 03:18:20 UTC,3/5,0,LOG,00000,"duration: 0.004 ms  execute s1: SELECT $1::text","parameters: $1 = 'plain'",,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.318 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,9,"EXECUTE",2026-12-01 03:18:20 UTC,3/0,0,LOG,00000,"duration: 0.224 ms  statement: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)","prepare: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)",,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.319 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,10,"idle",2026-12-01 03:18:20 UTC,3/0,0,LOG,08006,"could not send data to client: Broken pipe",,,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.319 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,11,"idle",2026-12-01 03:18:20 UTC,3/0,0,FATAL,08006,"connection to client lost",,,,,,,,,"probe app","client backend",,0
2026-12-01 03:18:20.319 UTC,"postgres","postgres",28370,"[local]",6b0e3c7c.6ed2,12,"idle",2026-12-01 03:18:20 UTC,,0,LOG,00000,"disconnection: session time: 0:00:00.014 user=postgres database=postgres host=[local]",,,,,,,,,"probe app","client backend",,0
"#;

    /// The jsonlog written beside STDERR_STATEMENTS.
    const JSON_STATEMENTS: &str = r#"{"timestamp":"2026-12-01 03:12:58.979 UTC","pid":25530,"session_id":"6b0e3b3a.63ba","line_num":1,"session_start":"2026-12-01 03:12:58 UTC","txid":0,"error_severity":"LOG","message":"starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit","backend_type":"postmaster","query_id":0}
{"timestamp":"2026-12-01 03:12:58.980 UTC","pid":25530,"session_id":"6b0e3b3a.63ba","line_num":2,"session_start":"2026-12-01 03:12:58 UTC","txid":0,"error_severity":"LOG","message":"listening on Unix socket \"/tmp/logprobe/.s.PGSQL.5491\"","backend_type":"postmaster","query_id":0}
{"timestamp":"2026-12-01 03:12:58.982 UTC","pid":25534,"session_id":"6b0e3b3a.63be","line_num":1,"session_start":"2026-12-01 03:12:58 UTC","txid":0,"error_severity":"LOG","message":"database system was shut down at 2026-12-01 03:12:57 UTC","backend_type":"startup","query_id":0}
{"timestamp":"2026-12-01 03:12:58.987 UTC","pid":25530,"session_id":"6b0e3b3a.63ba","line_num":3,"session_start":"2026-12-01 03:12:58 UTC","txid":0,"error_severity":"LOG","message":"database system is ready to accept connections","backend_type":"postmaster","query_id":0}
{"timestamp":"2026-12-01 03:13:04.505 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":1,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/2","txid":0,"error_severity":"LOG","message":"statement: CREATE TABLE t(id int, name text);","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.508 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":2,"ps":"CREATE TABLE","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 2.492 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.508 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":3,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/3","txid":0,"error_severity":"LOG","message":"statement: SELECT id,\n       name\n  FROM t\n WHERE id = 1;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.508 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":4,"ps":"SELECT","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.494 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.508 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":5,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/4","txid":0,"error_severity":"LOG","message":"statement: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":6,"ps":"PREPARE","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.080 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":7,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/5","txid":0,"error_severity":"LOG","message":"statement: EXECUTE q(5, 'a,b''c');","detail":"prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":8,"ps":"EXECUTE","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.111 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":9,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/6","txid":0,"error_severity":"LOG","message":"statement: EXECUTE q (6, NULL);","detail":"prepare: PREPARE q(int, text) AS SELECT * FROM t WHERE id = $1 AND name = $2;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":10,"ps":"EXECUTE","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.043 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":11,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/7","txid":0,"error_severity":"LOG","message":"statement: SELECT 1/0;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":12,"ps":"SELECT","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/7","txid":0,"error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"SELECT 1/0;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":13,"ps":"idle","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/8","txid":0,"error_severity":"LOG","message":"statement: SELECT $$it's\nmulti$$;","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.509 UTC","user":"postgres","dbname":"postgres","pid":25558,"remote_host":"[local]","session_id":"6b0e3b40.63d6","line_num":14,"ps":"SELECT","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.038 ms","application_name":"my app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.548 UTC","user":"postgres","dbname":"postgres","pid":25565,"remote_host":"[local]","session_id":"6b0e3b40.63dd","line_num":1,"ps":"PARSE","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/11","txid":0,"error_severity":"LOG","message":"duration: 0.312 ms  parse P_0: SELECT * FROM t WHERE id = $1\n  AND name <> 'x';","application_name":"pgbench","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.549 UTC","user":"postgres","dbname":"postgres","pid":25565,"remote_host":"[local]","session_id":"6b0e3b40.63dd","line_num":2,"ps":"BIND","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/12","txid":0,"error_severity":"LOG","message":"duration: 0.186 ms  bind P_0: SELECT * FROM t WHERE id = $1\n  AND name <> 'x';","detail":"parameters: $1 = '1'","application_name":"pgbench","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.549 UTC","user":"postgres","dbname":"postgres","pid":25565,"remote_host":"[local]","session_id":"6b0e3b40.63dd","line_num":3,"ps":"SELECT","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/12","txid":0,"error_severity":"LOG","message":"execute P_0: SELECT * FROM t WHERE id = $1\n  AND name <> 'x';","detail":"parameters: $1 = '1'","application_name":"pgbench","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:13:04.549 UTC","user":"postgres","dbname":"postgres","pid":25565,"remote_host":"[local]","session_id":"6b0e3b40.63dd","line_num":4,"ps":"SELECT","session_start":"2026-12-01 03:13:04 UTC","vxid":"3/12","txid":0,"error_severity":"LOG","message":"duration: 0.012 ms","application_name":"pgbench","backend_type":"client backend","query_id":0}
"#;

    /// The jsonlog written beside STDERR_DURATIONS.
    const JSON_DURATIONS: &str = r#"{"timestamp":"2026-12-01 03:18:20.309 UTC","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":1,"ps":"","session_start":"2026-12-01 03:18:20 UTC","txid":0,"error_severity":"LOG","message":"connection received: host=[local]","backend_type":"not initialized","query_id":0}
{"timestamp":"2026-12-01 03:18:20.310 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":2,"ps":"authentication","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/1","txid":0,"error_severity":"LOG","message":"connection authorized: user=postgres database=postgres application_name=probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.316 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":3,"ps":"PARSE","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/2","txid":0,"error_severity":"LOG","message":"duration: 1.226 ms  parse s0: SELECT id, name\n  FROM t\n WHERE name = $1 OR name = $2 OR id = $3","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.317 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":4,"ps":"BIND","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/3","txid":0,"error_severity":"LOG","message":"duration: 0.632 ms  bind s0: SELECT id, name\n  FROM t\n WHERE name = $1 OR name = $2 OR id = $3","detail":"parameters: $1 = 'a, ''b''\nc', $2 = NULL, $3 = '7'","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.317 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":5,"ps":"SELECT","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/3","txid":0,"error_severity":"LOG","message":"duration: 0.014 ms  execute s0: SELECT id, name\n  FROM t\n WHERE name = $1 OR name = $2 OR id = $3","detail":"parameters: $1 = 'a, ''b''\nc', $2 = NULL, $3 = '7'","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.317 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":6,"ps":"PARSE","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/4","txid":0,"error_severity":"LOG","message":"duration: 0.089 ms  parse s1: SELECT $1::text","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.317 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":7,"ps":"BIND","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/5","txid":0,"error_severity":"LOG","message":"duration: 0.019 ms  bind s1: SELECT $1::text","detail":"parameters: $1 = 'plain'","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.317 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":8,"ps":"SELECT","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/5","txid":0,"error_severity":"LOG","message":"duration: 0.004 ms  execute s1: SELECT $1::text","detail":"parameters: $1 = 'plain'","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.318 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":9,"ps":"EXECUTE","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","message":"duration: 0.224 ms  statement: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)","detail":"prepare: PREPARE p2(int) AS SELECT * FROM t WHERE id = $1; EXECUTE p2(3)","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.319 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":10,"ps":"idle","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/0","txid":0,"error_severity":"LOG","state_code":"08006","message":"could not send data to client: Broken pipe","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.319 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":11,"ps":"idle","session_start":"2026-12-01 03:18:20 UTC","vxid":"3/0","txid":0,"error_severity":"FATAL","state_code":"08006","message":"connection to client lost","application_name":"probe app","backend_type":"client backend","query_id":0}
{"timestamp":"2026-12-01 03:18:20.319 UTC","user":"postgres","dbname":"postgres","pid":28370,"remote_host":"[local]","session_id":"6b0e3c7c.6ed2","line_num":12,"ps":"idle","session_start":"2026-12-01 03:18:20 UTC","txid":0,"error_severity":"LOG","message":"disconnection: session time: 0:00:00.014 user=postgres database=postgres host=[local]","application_name":"probe app","backend_type":"client backend","query_id":0}
"#;

    fn stderr(prefix: &str) -> Format {
        Format::parse("stderr", prefix).expect("prefix parses")
    }

    /// Reads the whole log through a tiny buffer (so records straddle buffer refills) and fails
    /// loudly on a fatal error. Also returns the unreadable count.
    fn read(format: Format, log: &str) -> (Vec<Entry>, usize) {
        let mut reader = Reader::new(BufReader::with_capacity(7, log.as_bytes()), format);
        let entries = reader
            .by_ref()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("line {}: {}", e.line, e.message));
        (entries, reader.unreadable())
    }

    fn entries(format: Format, log: &str) -> Vec<Entry> {
        let (entries, unreadable) = read(format, log);
        assert_eq!(
            unreadable, 0,
            "nothing should be unreadable in {entries:#?}"
        );
        entries
    }

    /// The fatal error reading `log` stops on; fails loudly when it reads through.
    fn fatal(format: Format, log: &[u8]) -> LogError {
        let mut reader = Reader::new(log, format);
        let error = reader.by_ref().find_map(Result::err);
        assert!(reader.next().is_none(), "nothing after the error");
        error.expect("a fatal error")
    }

    /// `text` with `insert` put after its line `line`.
    fn after_line(text: &str, line: usize, insert: &str) -> String {
        let at = text
            .match_indices('\n')
            .nth(line - 1)
            .expect("enough lines")
            .0
            + 1;
        format!("{}{insert}{}", &text[..at], &text[at..])
    }

    fn texts(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|e| e.text.as_str()).collect()
    }

    fn values(values: &[Option<&str>]) -> Vec<Option<String>> {
        values.iter().map(|v| v.map(str::to_owned)).collect()
    }

    /// The same statements, whichever format the server wrote them in.
    fn assert_statements(entries: &[Entry]) {
        let select = "SELECT * FROM t WHERE id = $1 AND name = $2;";
        assert_eq!(
            texts(entries),
            [
                "CREATE TABLE t(id int, name text);",
                "SELECT id,\n       name\n  FROM t\n WHERE id = 1;",
                select,
                select,
                "SELECT 1/0;",
                "SELECT $$it's\nmulti$$;",
                "SELECT * FROM t WHERE id = $1\n  AND name <> 'x';",
            ]
        );
        let protocols: Vec<Protocol> = entries.iter().map(|e| e.protocol).collect();
        use Protocol::*;
        assert_eq!(
            protocols,
            [
                Simple, Simple, SqlExecute, SqlExecute, Simple, Simple, Extended
            ]
        );
        assert_eq!(entries[2].params, values(&[Some("5"), Some("a,b'c")]));
        assert_eq!(entries[3].params, values(&[Some("6"), None]));
        assert_eq!(entries[6].params, values(&[Some("1")]));
        assert!(entries.iter().all(|e| e.params_complete));
        assert!(
            entries[..6]
                .iter()
                .all(|e| e.params.len() == 2 || e.params.is_empty())
        );
        assert_eq!(entries[0].application.as_deref(), Some("my app"));
        assert_eq!(entries[6].application.as_deref(), Some("pgbench"));
        assert!(
            entries
                .iter()
                .all(|e| e.user.as_deref() == Some("postgres"))
        );
        assert!(
            entries
                .iter()
                .all(|e| e.database.as_deref() == Some("postgres"))
        );
    }

    /// The tokio-postgres session: one entry per executed statement, none for parse and bind.
    fn assert_durations(entries: &[Entry]) {
        assert_eq!(
            texts(entries),
            [
                "SELECT id, name\n  FROM t\n WHERE name = $1 OR name = $2 OR id = $3",
                "SELECT $1::text",
                "SELECT * FROM t WHERE id = $1;",
            ]
        );
        assert_eq!(
            entries[0].params,
            values(&[Some("a, 'b'\nc"), None, Some("7")])
        );
        assert_eq!(entries[0].protocol, Protocol::Extended);
        assert_eq!(entries[1].params, values(&[Some("plain")]));
        // `PREPARE p2 …; EXECUTE p2(3)` in one query string: the PREPARE is remembered, the
        // EXECUTE becomes the prepared query with its argument.
        assert_eq!(entries[2].protocol, Protocol::SqlExecute);
        assert_eq!(entries[2].params, values(&[Some("3")]));
        assert!(entries.iter().all(|e| e.params_complete));
        assert!(
            entries
                .iter()
                .all(|e| e.application.as_deref() == Some("probe app"))
        );
    }

    #[test]
    fn stderr_statements_with_default_style_prefix() {
        let entries = entries(stderr(PREFIX_STATEMENTS), STDERR_STATEMENTS);
        assert_statements(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [5, 7, 14, 17, 20, 23, 31]);
        assert_eq!(entries[0].session.as_deref(), Some("25558"));
    }

    #[test]
    fn csv_statements() {
        let entries = entries(Format::Csv, CSV_STATEMENTS);
        assert_statements(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [5, 7, 14, 16, 18, 20, 27]);
        assert_eq!(entries[0].session.as_deref(), Some("6b0e3b40.63d6"));
    }

    #[test]
    fn json_statements() {
        let entries = entries(Format::Json, JSON_STATEMENTS);
        assert_statements(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [5, 7, 11, 13, 15, 17, 21]);
        assert_eq!(entries[0].session.as_deref(), Some("6b0e3b40.63d6"));
    }

    #[test]
    fn stderr_durations_with_pgbadger_style_prefix() {
        let entries = entries(stderr(PREFIX_DURATIONS), STDERR_DURATIONS);
        assert_durations(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [15, 23, 25]);
        assert_eq!(entries[0].session.as_deref(), Some("28370"));
    }

    #[test]
    fn csv_durations() {
        let entries = entries(Format::Csv, CSV_DURATIONS);
        assert_durations(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [14, 20, 21]);
    }

    #[test]
    fn json_durations() {
        let entries = entries(Format::Json, JSON_DURATIONS);
        assert_durations(&entries);
        let lines: Vec<usize> = entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, [5, 8, 9]);
    }

    #[test]
    fn stderr_prefix_with_padding_and_most_escapes() {
        let entries = entries(stderr(PREFIX_ESCAPES), STDERR_ESCAPES);
        assert_durations(&entries);
        // %c wins over %p as the session.
        assert_eq!(entries[0].session.as_deref(), Some("6b0e3c84.6f02"));
        // `%-10u` pads "postgres" with spaces that are not part of the name.
        assert_eq!(entries[0].user.as_deref(), Some("postgres"));
        assert_eq!(entries[0].database.as_deref(), Some("postgres"));
    }

    #[test]
    fn counts_records_of_every_kind() {
        // The two excerpts hold the same 22 messages: the stderr DETAIL and STATEMENT lines
        // are parts of the message before them, as they are fields of a jsonlog record.
        let mut reader = Reader::new(JSON_STATEMENTS.as_bytes(), Format::Json);
        assert_eq!(reader.by_ref().count(), 7);
        assert_eq!(reader.records(), 22);
        assert_eq!(reader.unreadable(), 0);
        let mut reader = Reader::new(STDERR_STATEMENTS.as_bytes(), stderr(PREFIX_STATEMENTS));
        assert_eq!(reader.by_ref().count(), 7);
        assert_eq!(reader.records(), 22);
    }

    #[test]
    fn truncated_parameter_is_incomplete() {
        // log_parameter_max_length = 20
        let log = "\
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench LOG:  duration: 0.046 ms  parse <unnamed>: SELECT $1::text AS x;
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench LOG:  duration: 0.013 ms  bind <unnamed>: SELECT $1::text AS x;
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench DETAIL:  parameters: $1 = 'longlonglonglonglong...'
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench LOG:  execute <unnamed>: SELECT $1::text AS x;
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench DETAIL:  parameters: $1 = 'longlonglonglonglong...'
2026-12-01 03:13:08.326 UTC [25631] postgres@postgres pgbench LOG:  duration: 0.011 ms
";
        let entries = entries(stderr(PREFIX_STATEMENTS), log);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].line, 4);
        assert_eq!(
            entries[0].params,
            values(&[Some("longlonglonglonglong...")])
        );
        assert!(!entries[0].params_complete);
    }

    #[test]
    fn parameters_as_postgresql_16_and_later_write_them() {
        // PostgreSQL 18.4, log_statement = 'all': "Parameters:", capitalised.
        let log = "\
2026-12-01 03:38:43.122 UTC [21848] LOG:  execute P_0: SELECT $1::int + 1;
2026-12-01 03:38:43.122 UTC [21848] DETAIL:  Parameters: $1 = '5'
";
        let entries = entries(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].params, values(&[Some("5")]));
        assert!(entries[0].params_complete);
        let csv = "2026-12-01 03:38:43.122 UTC,\"postgres\",\"postgres\",21848,\"[local]\",\
                   6b0e4143.5558,1,\"SELECT\",2026-12-01 03:38:43 UTC,2/3,0,LOG,00000,\
                   \"execute P_0: SELECT $1::int + 1;\",\"Parameters: $1 = '5'\",,,,,,,,\
                   \"pgbench\",\"client backend\",,0\n";
        let from_csv = super::tests::entries(Format::Csv, csv);
        assert_eq!(from_csv.len(), 1);
        assert_eq!(from_csv[0].params, values(&[Some("5")]));
    }

    #[test]
    fn extended_protocol_without_logged_parameters_is_incomplete() {
        // log_parameter_max_length = 0 logs no DETAIL at all.
        let log =
            "2026-12-01 10:00:00.123 UTC [4242] LOG:  execute S_1: SELECT * FROM t WHERE id = $1\n";
        let entries = entries(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(entries.len(), 1);
        assert!(entries[0].params.is_empty());
        assert!(!entries[0].params_complete);
    }

    #[test]
    fn pgjdbc_statement_and_portal_names() {
        let log = "\
2026-12-01 10:00:00.123 UTC [4242] LOG:  execute S_1: SELECT * FROM t WHERE id = $1
2026-12-01 10:00:00.123 UTC [4242] DETAIL:  parameters: $1 = '5'
2026-12-01 10:00:00.124 UTC [4242] LOG:  execute <unnamed>/C_2: SELECT * FROM t WHERE name = $1
2026-12-01 10:00:00.124 UTC [4242] DETAIL:  parameters: $1 = 'x'
2026-12-01 10:00:00.125 UTC [4242] LOG:  execute fetch from <unnamed>/C_2: SELECT * FROM t WHERE name = $1
2026-12-01 10:00:00.125 UTC [4242] DETAIL:  parameters: $1 = 'x'
2026-12-01 10:00:00.126 UTC [4242] LOG:  duration: 0.2 ms  execute S_3: SELECT 1
";
        let entries = entries(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(
            texts(&entries),
            [
                "SELECT * FROM t WHERE id = $1",
                "SELECT * FROM t WHERE name = $1",
                "SELECT 1"
            ]
        );
        assert_eq!(entries[1].params, values(&[Some("x")]));
        assert!(entries.iter().all(|e| e.protocol == Protocol::Extended));
    }

    #[test]
    fn parameter_gap_is_incomplete() {
        let log = "\
2026-12-01 10:00:00.123 UTC [4242] LOG:  execute <unnamed>: SELECT $1, $2, $3
2026-12-01 10:00:00.123 UTC [4242] DETAIL:  parameters: $1 = '1', $3 = '3'
";
        let entries = entries(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(entries[0].params, values(&[Some("1"), None, Some("3")]));
        assert!(!entries[0].params_complete);
    }

    #[test]
    fn sql_execute_resolved_through_remembered_prepare() {
        // log_statement = all writes the PREPARE; this EXECUTE lost its `prepare:` DETAIL.
        let log = "\
2026-12-01 10:00:00.001 UTC [4242] LOG:  statement: PREPARE \"Find\"(int, text[]) AS
\tSELECT * FROM t WHERE id = $1 AND name = ANY ($2);
2026-12-01 10:00:00.002 UTC [4243] LOG:  statement: EXECUTE \"Find\"(1, '{a}')
2026-12-01 10:00:00.003 UTC [4242] LOG:  statement: EXECUTE \"Find\" ( -1 , '{\"a,b\"}'::text[] );
2026-12-01 10:00:00.004 UTC [4242] LOG:  statement: DEALLOCATE \"Find\"
2026-12-01 10:00:00.005 UTC [4242] LOG:  statement: EXECUTE \"Find\"(2, '{c}')
2026-12-01 10:00:00.006 UTC [4242] LOG:  statement: prepare lower as select $1
2026-12-01 10:00:00.007 UTC [4242] LOG:  statement: EXECUTE LOWER
";
        let (entries, unreadable) = read(stderr(DEFAULT_LINE_PREFIX), log);
        // Another session's EXECUTE and the one after DEALLOCATE name nothing known.
        assert_eq!(unreadable, 2);
        assert_eq!(
            texts(&entries),
            [
                "SELECT * FROM t WHERE id = $1 AND name = ANY ($2);",
                "DEALLOCATE \"Find\"",
                "select $1",
            ]
        );
        assert_eq!(entries[0].line, 4);
        assert_eq!(entries[0].protocol, Protocol::SqlExecute);
        assert_eq!(entries[0].params, values(&[Some("-1"), Some("{\"a,b\"}")]));
        assert!(entries[0].params_complete);
        assert!(entries[2].params.is_empty());
        assert!(!entries[2].params_complete, "$1 has no argument");
    }

    #[test]
    fn disconnection_forgets_the_session() {
        let log = "\
2026-12-01 10:00:00.001 UTC [4242] LOG:  statement: PREPARE q AS SELECT 1
2026-12-01 10:00:00.002 UTC [4242] LOG:  disconnection: session time: 0:00:00.014 user=postgres database=postgres host=[local]
2026-12-01 10:00:01.000 UTC [4242] LOG:  statement: EXECUTE q
";
        let (entries, unreadable) = read(stderr(DEFAULT_LINE_PREFIX), log);
        assert!(entries.is_empty());
        assert_eq!(unreadable, 1);
    }

    #[test]
    fn multi_statement_query_string_is_one_entry() {
        let log = "2026-12-01 10:00:00.001 UTC [4242] LOG:  statement: BEGIN; SELECT ';' FROM t; COMMIT\n";
        let entries = entries(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(texts(&entries), ["BEGIN; SELECT ';' FROM t; COMMIT"]);
    }

    #[test]
    fn errors_and_durations_alone_are_not_statements() {
        let log = "\
2026-12-01 10:00:00.001 UTC [4242] ERROR:  relation \"nope\" does not exist at character 15
2026-12-01 10:00:00.001 UTC [4242] STATEMENT:  SELECT * FROM nope
2026-12-01 10:00:00.002 UTC [4242] LOG:  duration: 0.050 ms
2026-12-01 10:00:00.003 UTC [4242] LOG:  duration: 12.000 ms  plan:
\tQuery Text: SELECT 1
\tResult  (cost=0.00..0.01 rows=1 width=4)
2026-12-01 10:00:00.004 UTC [4242] LOG:  checkpoint starting: time
";
        let (entries, unreadable) = read(stderr(DEFAULT_LINE_PREFIX), log);
        assert!(entries.is_empty());
        assert_eq!(unreadable, 0);
    }

    #[test]
    fn csvlog_of_postgresql_13_has_24_columns() {
        let log = "2026-12-01 10:00:00.123 UTC,\"app user\",\"shop\",4242,\"10.0.0.7:51000\",6b0e3b40.1092,3,\"SELECT\",2026-12-01 09:59:00 UTC,3/12,0,LOG,00000,\"execute <unnamed>: SELECT $1\",\"parameters: $1 = '5'\",,,,,,,,\"psql\",\"client backend\"\n";
        let entries = entries(Format::Csv, log);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].user.as_deref(), Some("app user"));
        assert_eq!(entries[0].database.as_deref(), Some("shop"));
        assert_eq!(entries[0].params, values(&[Some("5")]));
    }

    #[test]
    fn application_name_with_spaces_and_colons() {
        let log = "2026-12-01 10:00:00.001 UTC [4242] app=My App: Reports LOG user=bob LOG:  statement: SELECT 1\n";
        let entries = entries(stderr("%m [%p] app=%a user=%u "), log);
        assert_eq!(
            entries[0].application.as_deref(),
            Some("My App: Reports LOG")
        );
        assert_eq!(entries[0].user.as_deref(), Some("bob"));
        assert_eq!(entries[0].text, "SELECT 1");
    }

    #[test]
    fn windows_line_ends() {
        let log = STDERR_DURATIONS.replace('\n', "\r\n");
        assert_durations(&entries(stderr(PREFIX_DURATIONS), &log));
        assert_durations(&entries(Format::Csv, &CSV_DURATIONS.replace('\n', "\r\n")));
    }

    #[test]
    fn empty_prefix_and_no_session() {
        let log = "LOG:  statement: SELECT 1\nLOG:  statement: SELECT 2\n";
        let entries = entries(stderr(""), log);
        assert_eq!(texts(&entries), ["SELECT 1", "SELECT 2"]);
        assert_eq!(entries[0].session, None);
    }

    #[test]
    fn stray_lines_are_counted() {
        let log = format!(
            "{}cp: cannot stat '/archive/0001': No such file or directory\n{}",
            "2026-12-01 10:00:00.001 UTC [4242] LOG:  statement: SELECT 1\n",
            "2026-12-01 10:00:00.002 UTC [4242] LOG:  statement: SELECT 2\n"
        );
        let (entries, unreadable) = read(stderr(DEFAULT_LINE_PREFIX), &log);
        assert_eq!(texts(&entries), ["SELECT 1", "SELECT 2"]);
        assert_eq!(unreadable, 1);

        let csv = after_line(CSV_STATEMENTS, 6, "not a record, at all\n");
        let (entries, unreadable) = read(Format::Csv, &csv);
        assert_eq!(entries.len(), 7);
        assert_eq!(unreadable, 1);

        let json = after_line(JSON_STATEMENTS, 6, "{\"timestamp\": oops}\n");
        let (entries, unreadable) = read(Format::Json, &json);
        assert_eq!(entries.len(), 7);
        assert_eq!(unreadable, 1);
    }

    #[test]
    fn stderr_record_cut_at_end_of_file_is_dropped() {
        let log = "\
2026-12-01 10:00:00.001 UTC [4242] LOG:  statement: SELECT 1
2026-12-01 10:00:00.002 UTC [4242] LOG:  statement: SELECT * FROM t WHE";
        let (entries, unreadable) = read(stderr(DEFAULT_LINE_PREFIX), log);
        assert_eq!(texts(&entries), ["SELECT 1"]);
        assert_eq!(unreadable, 1);
    }

    #[test]
    fn fatal_nul_byte_names_its_line() {
        let mut log = STDERR_STATEMENTS.as_bytes().to_vec();
        let third = log
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(1)
            .unwrap()
            .0;
        log[third + 5] = 0;
        let error = fatal(stderr(PREFIX_STATEMENTS), &log);
        assert_eq!(error.line, 3);
        assert!(error.message.contains("NUL"), "{}", error.message);
    }

    #[test]
    fn fatal_invalid_utf8_names_its_line() {
        let log = b"{\"message\":\"statement: SELECT 1\",\"error_severity\":\"LOG\"}\n\xff\xfe\n";
        let error = fatal(Format::Json, log);
        assert_eq!(error.line, 2);
        assert!(error.message.contains("UTF-8"), "{}", error.message);
    }

    #[test]
    fn fatal_csv_quote_never_closing() {
        let cut = &CSV_STATEMENTS[..CSV_STATEMENTS.find("  FROM t").unwrap()];
        let error = fatal(Format::Csv, cut.as_bytes());
        assert_eq!(error.line, 7);
        assert_eq!(
            error.message,
            "truncated: a quoted field opened here never closes"
        );
    }

    #[test]
    fn fatal_json_cut_mid_object() {
        let cut = &JSON_STATEMENTS[..JSON_STATEMENTS.len() - 40];
        let error = fatal(Format::Json, cut.as_bytes());
        assert_eq!(error.line, 22);
        assert!(error.message.starts_with("truncated"), "{}", error.message);
        // A bad line followed by a newline and nothing else is cut all the same.
        let error = fatal(Format::Json, format!("{cut}\n").as_bytes());
        assert_eq!(error.line, 22);
    }

    #[test]
    fn fatal_stderr_read_as_csv_or_json() {
        let error = fatal(Format::Csv, STDERR_STATEMENTS.as_bytes());
        assert_eq!(error.line, 1);
        assert!(
            error.message.contains("not a csvlog record"),
            "{}",
            error.message
        );
        let error = fatal(Format::Json, STDERR_STATEMENTS.as_bytes());
        assert_eq!(error.line, 1);
        assert!(
            error.message.contains("not a jsonlog record"),
            "{}",
            error.message
        );
        let error = fatal(Format::Csv, JSON_STATEMENTS.as_bytes());
        assert_eq!(error.line, 1);
    }

    #[test]
    fn fatal_prefix_that_does_not_match() {
        let error = fatal(stderr(DEFAULT_LINE_PREFIX), STDERR_DURATIONS.as_bytes());
        assert_eq!(error.line, 1);
        assert_eq!(
            error.message,
            "line 1 does not start with log_line_prefix '%m [%p] ' (is this a csvlog or jsonlog \
             file, or was the server's log_line_prefix different? pass it with --log-line-prefix)"
        );
        let error = fatal(stderr(DEFAULT_LINE_PREFIX), b"\n\nhello\n");
        assert_eq!(error.line, 3);
        let error = fatal(stderr(DEFAULT_LINE_PREFIX), CSV_STATEMENTS.as_bytes());
        assert_eq!(error.line, 1);
    }

    #[test]
    fn format_names_and_prefix_errors() {
        assert!(matches!(Format::parse("csvlog", ""), Ok(Format::Csv)));
        assert!(matches!(Format::parse("json", ""), Ok(Format::Json)));
        assert_eq!(
            Format::parse("stderr", "%m %z ").unwrap_err(),
            "unknown escape %z in log_line_prefix '%m %z '"
        );
        assert!(Format::parse("syslog", "").unwrap_err().contains("syslog"));
        let prefix = Prefix::parse("%-10u%%%5p %").unwrap();
        assert_eq!(prefix.source(), "%-10u%%%5p %");
        assert_eq!(
            prefix.items,
            [
                Item::Field {
                    field: Field::User,
                    padded: true
                },
                Item::Literal("%".into()),
                Item::Field {
                    field: Field::Pid,
                    padded: true
                },
                Item::Literal(" ".into()),
            ]
        );
    }

    #[test]
    fn prefix_reads_fields() {
        let prefix = Prefix::parse("%t [%p-%l] %q%u@%d ").unwrap();
        let head = prefix
            .read("2026-12-01 10:00:00 CET [7-1] alice@shop db LOG:  statement: SELECT 1")
            .unwrap();
        assert_eq!(head.user, Some("alice"));
        assert_eq!(head.database, Some("shop db"));
        assert_eq!(head.severity, "LOG");
        assert_eq!(head.message, "statement: SELECT 1");
        // A process without a session stops at %q.
        let head = prefix
            .read("2026-12-01 10:00:00 +03 [7-1] LOG:  checkpoint starting: time")
            .unwrap();
        assert_eq!(head.user, None);
        assert_eq!(head.pid, Some("7"));
        assert!(
            prefix
                .read("2026-12-01 10:00:00 CET [7-1] alice@shop NOTE:  x")
                .is_none()
        );
        // A zone runs into a literal that does not start with a space.
        let tight = Prefix::parse("%t[%p]").unwrap();
        assert_eq!(
            tight
                .read("2026-12-01 10:00:00 UTC[42]DEBUG:  x")
                .unwrap()
                .pid,
            Some("42")
        );
    }

    #[test]
    fn sql_helpers() {
        assert_eq!(
            split_arguments(" 1, 'a,b', f(2, 3), ARRAY[4,5], $$x,y$$ "),
            ["1", "'a,b'", "f(2, 3)", "ARRAY[4,5]", "$$x,y$$"]
        );
        assert_eq!(argument_value("NULL"), None);
        assert_eq!(argument_value("null::int"), None);
        assert_eq!(argument_value("'it''s'"), Some("it's".into()));
        assert_eq!(argument_value("'{1,2}'::int[]"), Some("{1,2}".into()));
        assert_eq!(argument_value("'5'::int + 1"), Some("'5'::int + 1".into()));
        assert_eq!(argument_value("now()"), Some("now()".into()));
        assert_eq!(
            max_placeholder("SELECT $2, '$9', \"$8\", $$ $7 $$, a$5 -- $6\n, $10"),
            10
        );
        assert_eq!(
            split_statements("SELECT ';'; /* ; */ SELECT 2;\n  -- done\n"),
            ["SELECT ';';", " /* ; */ SELECT 2;"]
        );
        // Read as the server reads it: a `--` comment ends at `\r` too, so `$3` counts and the
        // `;` after it ends a statement.
        assert_eq!(max_placeholder("SELECT $1 -- $9\r, $3"), 3);
        assert_eq!(
            split_statements("PREPARE q AS SELECT 1 -- c\r; EXECUTE q"),
            ["PREPARE q AS SELECT 1 -- c\r;", " EXECUTE q"]
        );
        assert_eq!(
            identifier("\"My\"\"Q\" (1)"),
            Some(("My\"Q".to_owned(), " (1)"))
        );
        assert_eq!(argument_value("E'a\\'b'::text"), Some("a'b".into()));
        assert_eq!(
            parse_prepare("/* c */ PREPARE Q (int, \"my type\") AS\n  SELECT 1"),
            Some(("q".to_owned(), "SELECT 1"))
        );
        assert_eq!(parse_prepare("PREPARED x AS SELECT 1"), None);
        assert_eq!(
            parse_execute("EXECUTE q(1) ;"),
            Some(("q".to_owned(), vec!["1"]))
        );
        assert_eq!(parse_execute("EXECUTE q(1) + 2"), None);
        assert_eq!(parse_deallocate("deallocate prepare all"), Some(None));
        let (params, complete) =
            parse_parameters("parameters: $1 = 'a'', $2 = ''b', $2 = NULL").unwrap();
        assert_eq!(params, values(&[Some("a', $2 = 'b"), None]));
        assert!(complete);
        let (params, complete) =
            parse_parameters("parameters: $1 = 'a', $1 = NULL, $2 = 'cut off").unwrap();
        assert_eq!(params, values(&[Some("a")]));
        assert!(!complete, "a repeated $1, then a value that never closes");
    }

    /// A deterministic xorshift generator: the same "random" logs on every run.
    fn next_random(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn random_bytes_never_panic() {
        const PIECES: [&[u8]; 16] = [
            b"\n",
            b"\t",
            b"'",
            b"\"",
            b",",
            b"$1",
            b"LOG:  ",
            b"DETAIL:  parameters: $1 = ",
            b"statement: EXECUTE q(",
            b"2026-12-01 10:00:00.123 UTC ",
            b"[42] ",
            b"{\"message\":",
            b"execute <unnamed>: ",
            b"PREPARE q AS ",
            b"\xc3\xa9",
            b"%",
        ];
        let formats = [
            Format::Csv,
            Format::Json,
            stderr(DEFAULT_LINE_PREFIX),
            stderr(PREFIX_STATEMENTS),
            stderr(PREFIX_ESCAPES),
            stderr("%a%u%d%r "),
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..400 {
            let mut log = Vec::new();
            let length = next_random(&mut state) % 200;
            for _ in 0..length {
                let pick = next_random(&mut state);
                if pick.is_multiple_of(3) {
                    log.push((pick >> 8) as u8);
                } else {
                    log.extend_from_slice(PIECES[(pick >> 8) as usize % PIECES.len()]);
                }
            }
            for format in &formats {
                let reader = Reader::new(log.as_slice(), format.clone());
                for _ in reader {}
            }
            // Real logs cut and spliced at random places.
            let real = [STDERR_STATEMENTS, CSV_DURATIONS, JSON_STATEMENTS][round % 3].as_bytes();
            let a = next_random(&mut state) as usize % real.len();
            let b = next_random(&mut state) as usize % real.len();
            let spliced = [&real[..a.min(b)], &log, &real[a.max(b)..]].concat();
            for format in &formats {
                for _ in Reader::new(spliced.as_slice(), format.clone()) {}
            }
        }
    }

    /// A read of `log` through a small buffer: its entries, and its counts of unreadable and
    /// oversized records.
    fn read_counting(format: Format, log: &str) -> (Vec<Entry>, usize, usize) {
        let mut reader = Reader::new(BufReader::with_capacity(4096, log.as_bytes()), format);
        let entries = reader
            .by_ref()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("line {}: {}", e.line, e.message));
        (entries, reader.unreadable(), reader.oversized())
    }

    fn csv_statement(session: &str, sql: &str) -> String {
        format!(
            "2026-12-01 03:13:04.505 UTC,\"postgres\",\"postgres\",25558,\"[local]\",{session},1,\
             \"idle\",2026-12-01 03:13:04 UTC,3/2,0,LOG,00000,\"statement: {}\",,,,,,,,,\"my app\",\
             \"client backend\",,0\n",
            sql.replace('"', "\"\"")
        )
    }

    /// A statement of about `size` bytes whose text holds double quotes all along, so that a
    /// cut anywhere may fall inside a doubled quote.
    fn long_statement(size: usize, line_break: bool) -> String {
        let mut sql = String::from("SELECT count(*) FROM t WHERE name IN (");
        let item = if line_break {
            "\"a\"\"b\",\n"
        } else {
            "'x\"é\"', "
        };
        while sql.len() < size {
            sql.push_str(item);
        }
        sql.push_str("'z')");
        sql
    }

    #[test]
    fn csv_statement_over_the_cap_is_counted_and_left_out_and_the_next_is_read() {
        for line_break in [false, true] {
            let log = format!(
                "{}{}{}",
                csv_statement("s.1", "SELECT 1"),
                csv_statement("s.2", &long_statement(MAX_RECORD + 100, line_break)),
                csv_statement("s.3", "SELECT 3"),
            );
            let (entries, unreadable, oversized) = read_counting(Format::Csv, &log);
            assert!(
                texts(&entries) == ["SELECT 1", "SELECT 3"],
                "{line_break}: {} entries",
                entries.len()
            );
            assert_eq!((unreadable, oversized), (0, 1), "{line_break}");
        }
    }

    #[test]
    fn csv_statement_under_the_cap_is_read_whole() {
        let sql = long_statement(MAX_RECORD - 4096, false);
        let log = csv_statement("s.1", &sql);
        let (entries, unreadable, oversized) = read_counting(Format::Csv, &log);
        assert_eq!((entries.len(), unreadable, oversized), (1, 0, 0));
        assert!(entries[0].text == sql, "the statement is read whole");
    }

    #[test]
    fn json_statement_over_the_cap_is_counted_and_left_out() {
        let line = |sql: &str| {
            format!(
                "{{\"timestamp\":\"2026-12-01 03:13:04.505 UTC\",\"user\":\"postgres\",\
                 \"session_id\":\"s.1\",\"error_severity\":\"LOG\",\"message\":{},\
                 \"application_name\":\"my app\"}}\n",
                serde_json::Value::String(format!("statement: {sql}"))
            )
        };
        let log = format!(
            "{}{}{}",
            line("SELECT 1"),
            line(&long_statement(MAX_RECORD + 100, false)),
            line("SELECT 3")
        );
        let (entries, unreadable, oversized) = read_counting(Format::Json, &log);
        assert!(
            texts(&entries) == ["SELECT 1", "SELECT 3"],
            "{} entries",
            entries.len()
        );
        assert_eq!((unreadable, oversized), (0, 1));
    }

    #[test]
    fn stderr_statement_over_the_cap_is_counted_and_left_out() {
        let head = "2026-12-01 03:13:04.505 UTC [25558] LOG:  statement: ";
        let one_line = long_statement(MAX_RECORD + 100, false);
        let many_lines = long_statement(MAX_RECORD + 100, true).replace('\n', "\n\t");
        for long in [one_line, many_lines] {
            let log = format!("{head}SELECT 1\n{head}{long}\n{head}SELECT 3\n");
            let (entries, unreadable, oversized) = read_counting(stderr(DEFAULT_LINE_PREFIX), &log);
            assert!(
                texts(&entries) == ["SELECT 1", "SELECT 3"],
                "{} entries",
                entries.len()
            );
            assert_eq!((unreadable, oversized), (0, 1));
        }
    }
}
