//! Logged statements grouped into read paths: statements equal once their literals and
//! parameters are set aside are one read path, except where they differ in a literal compared
//! with a column that a partial index's predicate mentions (the planner proves such a predicate
//! from the constant, so `visibility = 'visible'` and `visibility = 'deleted'` are two paths).

use std::collections::{BTreeMap, HashSet};

use super::log::{Entry, Protocol, Remembered};
use super::shape::{self, LiteralValue};

/// plancheck's own sessions, left out of what is captured.
const OWN_APPLICATION: &str = "plancheck";

/// One read path found in the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The shape key and the literals that split it ([`Grouper::key`]).
    pub key: String,
    /// The first statement of the group with every parameter value logged, verbatim.
    pub text: String,
    /// Its parameter values, as logged (text; never NULL).
    pub params: Vec<String>,
    /// Where it was read: the file as given and the line its record starts on.
    pub file: String,
    pub line: usize,
    /// How many logged statements had this shape.
    pub count: usize,
    /// Statements of this shape seen without a usable set of values (a value cut by
    /// `log_parameter_max_length`, or NULL, which an expectation's `params` cannot hold).
    pub unusable_values: usize,
}

impl Group {
    /// The statement kept, or the shape key when no statement had usable values (for a name).
    pub fn text_or_key(&self) -> &str {
        if self.text.is_empty() {
            &self.key
        } else {
            &self.text
        }
    }
}

/// What a statement text was found to be: not a read path (why), or a read path's key.
#[derive(Debug, Clone)]
enum Found {
    Skip(String),
    Key(String),
}

/// The statements read so far, grouped; what was skipped, counted by why.
#[derive(Debug, Default)]
pub struct Grouper {
    /// Column names any partial index's predicate mentions.
    predicate_columns: HashSet<String>,
    groups: BTreeMap<String, Group>,
    /// What each statement text seen lately was found to be: a log repeats the same few texts,
    /// whose shape is then read once.
    remembered: Remembered<Found>,
    /// Statements that are not read paths, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Every statement read.
    pub statements: usize,
}

impl Grouper {
    /// A grouper splitting shapes on literals compared with these columns (the columns of
    /// every partial index's predicate in the database).
    pub fn new(predicate_columns: impl IntoIterator<Item = String>) -> Grouper {
        Grouper {
            predicate_columns: predicate_columns.into_iter().collect(),
            ..Grouper::default()
        }
    }

    /// The grouping key of a statement: its shape, then, for each literal compared with a
    /// column a partial index's predicate mentions, that column and the literal (a `$n` is
    /// written as such: a bound value proves no predicate).
    pub fn key(&self, text: &str) -> String {
        let shape = shape::shape(text);
        let mut key = shape.key;
        for literal in &shape.literals {
            let Some(column) = &literal.column else {
                continue;
            };
            if !self.predicate_columns.contains(column) {
                continue;
            }
            let value = match &literal.value {
                LiteralValue::Text(v) => format!("'{v}'"),
                LiteralValue::Number(v) | LiteralValue::Other(v) => v.clone(),
                LiteralValue::Param(n) => format!("${n}"),
            };
            key.push_str(&format!("\n{column} = {value}"));
        }
        key
    }

    /// Takes one logged statement read from `file`.
    pub fn add(&mut self, file: &str, entry: Entry) {
        self.statements += 1;
        if entry.application.as_deref() == Some(OWN_APPLICATION) {
            *self.skipped.entry("plancheck's own".into()).or_default() += 1;
            return;
        }
        let found = match self.remembered.get(&entry.text) {
            Some(found) => found.clone(),
            None => {
                let found = match shape::read_path(&entry.text) {
                    Err(skip) => Found::Skip(skip.reason()),
                    Ok(()) => Found::Key(self.key(&entry.text)),
                };
                self.remembered.remember(&entry.text, found.clone());
                found
            }
        };
        let key = match found {
            Found::Skip(reason) => {
                *self.skipped.entry(reason).or_default() += 1;
                return;
            }
            Found::Key(key) => key,
        };
        let usable = usable_values(&entry);
        let group = self.groups.entry(key.clone()).or_insert_with(|| Group {
            key,
            text: String::new(),
            params: Vec::new(),
            file: file.to_string(),
            line: entry.line,
            count: 0,
            unusable_values: 0,
        });
        group.count += 1;
        match usable {
            Some(params) if group.text.is_empty() => {
                group.text = entry.text;
                group.params = params;
                group.file = file.to_string();
                group.line = entry.line;
            }
            Some(_) => {}
            None => group.unusable_values += 1,
        }
    }

    /// A grouper of its own for part of a log, splitting shapes as this one does.
    pub fn empty_like(&self) -> Grouper {
        Grouper {
            predicate_columns: self.predicate_columns.clone(),
            ..Grouper::default()
        }
    }

    /// Takes in what `later` read from a later part of the log (its lines numbered from
    /// `line_offset` + 1 in the whole file), as if this grouper had read on into it: counts add
    /// up, and a group keeps its first statement with usable values.
    pub fn merge(&mut self, later: Grouper, line_offset: usize) {
        self.statements += later.statements;
        for (why, n) in later.skipped {
            *self.skipped.entry(why).or_default() += n;
        }
        for (key, mut g) in later.groups {
            g.line += line_offset;
            match self.groups.get_mut(&key) {
                None => {
                    self.groups.insert(key, g);
                }
                Some(first) => {
                    first.count += g.count;
                    first.unusable_values += g.unusable_values;
                    if first.text.is_empty() && !g.text.is_empty() {
                        first.text = g.text;
                        first.params = g.params;
                        first.file = g.file;
                        first.line = g.line;
                    }
                }
            }
        }
    }

    /// How many read paths so far.
    pub fn read_paths(&self) -> usize {
        self.groups.len()
    }

    /// Every group so far, in key order (stable from run to run), taken out of the grouper.
    pub fn groups(&mut self) -> Vec<Group> {
        std::mem::take(&mut self.groups).into_values().collect()
    }
}

/// The entry's parameter values when an expectation can hold them: every one logged whole and
/// none NULL. A simple query has none.
fn usable_values(entry: &Entry) -> Option<Vec<String>> {
    if entry.protocol == Protocol::Simple {
        return entry.params_complete.then(Vec::new);
    }
    if !entry.params_complete {
        return None;
    }
    entry.params.iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str, params: &[Option<&str>]) -> Entry {
        Entry {
            line: 1,
            session: None,
            application: Some("app".into()),
            database: None,
            user: None,
            text: text.into(),
            params: params.iter().map(|p| p.map(str::to_string)).collect(),
            params_complete: true,
            protocol: if params.is_empty() {
                Protocol::Simple
            } else {
                Protocol::Extended
            },
        }
    }

    fn grouper() -> Grouper {
        Grouper::new(["visibility".to_string()])
    }

    #[test]
    fn literals_and_parameters_of_one_shape_are_one_read_path() {
        let mut g = grouper();
        g.add(
            "a.log",
            entry("SELECT * FROM posts WHERE thread_id = 5", &[]),
        );
        g.add(
            "a.log",
            entry("SELECT * FROM posts WHERE thread_id = 7", &[]),
        );
        g.add(
            "a.log",
            entry("SELECT * FROM posts WHERE thread_id = $1", &[Some("9")]),
        );
        let groups = g.groups();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].count, 3);
        // The first statement is kept verbatim.
        assert_eq!(groups[0].text, "SELECT * FROM posts WHERE thread_id = 5");
        assert!(groups[0].params.is_empty());
    }

    #[test]
    fn a_literal_a_partial_index_predicate_mentions_splits_the_shape() {
        let mut g = grouper();
        let sql =
            |v: &str| format!("SELECT * FROM posts WHERE thread_id = $1 AND visibility = {v}");
        g.add("a.log", entry(&sql("'visible'"), &[Some("1")]));
        g.add("a.log", entry(&sql("'deleted'"), &[Some("1")]));
        g.add("a.log", entry(&sql("'visible'"), &[Some("2")]));
        g.add("a.log", entry(&sql("$2"), &[Some("1"), Some("visible")]));
        let groups = g.groups();
        assert_eq!(groups.len(), 3, "{groups:#?}");
        let counts: Vec<usize> = groups.iter().map(|g| g.count).collect();
        assert_eq!(counts.iter().sum::<usize>(), 4);
        assert!(
            groups
                .iter()
                .any(|g| g.text.contains("'visible'") && g.count == 2)
        );
        assert!(
            groups
                .iter()
                .any(|g| g.text.contains("$2") && g.params == ["1", "visible"])
        );
    }

    #[test]
    fn a_literal_no_predicate_mentions_does_not_split() {
        let mut g = Grouper::new(Vec::new());
        g.add(
            "a.log",
            entry("SELECT * FROM posts WHERE visibility = 'visible'", &[]),
        );
        g.add(
            "a.log",
            entry("SELECT * FROM posts WHERE visibility = 'deleted'", &[]),
        );
        assert_eq!(g.groups().len(), 1);
    }

    #[test]
    fn what_is_not_a_read_path_is_counted_by_why() {
        let mut g = grouper();
        g.add("a.log", entry("BEGIN", &[]));
        g.add("a.log", entry("INSERT INTO posts VALUES (1)", &[]));
        g.add("a.log", entry("SELECT relname FROM pg_class", &[]));
        let mut own = entry("SELECT * FROM posts WHERE id = 1", &[]);
        own.application = Some("plancheck".into());
        g.add("a.log", own);
        assert_eq!(g.statements, 4);
        assert_eq!(g.skipped.values().sum::<usize>(), 4, "{:?}", g.skipped);
        assert_eq!(g.skipped.get("plancheck's own"), Some(&1));
        assert!(g.groups().is_empty());
    }

    #[test]
    fn values_an_expectation_cannot_hold_wait_for_a_later_statement() {
        let mut g = grouper();
        let sql = "SELECT * FROM posts WHERE thread_id = $1";
        g.add("a.log", entry(sql, &[None]));
        let mut cut = entry(sql, &[Some("12...")]);
        cut.params_complete = false;
        g.add("a.log", cut);
        let groups = g.groups();
        assert_eq!(groups[0].unusable_values, 2);
        assert!(
            groups[0].text.is_empty(),
            "no statement with usable values yet"
        );

        let mut g = grouper();
        g.add("a.log", entry(sql, &[None]));
        let mut later = entry(sql, &[Some("3")]);
        later.line = 40;
        g.add("b.log", later);
        let groups = g.groups();
        assert_eq!(
            (
                groups[0].text.as_str(),
                groups[0].line,
                groups[0].file.as_str()
            ),
            (sql, 40, "b.log")
        );
        assert_eq!(groups[0].params, ["3"]);
    }
}
