//! A read path logged under two scopes: the statement a member's page sends and the one a
//! moderator's page sends often differ by one condition (`AND p.visibility = 'visible'`), the
//! condition a partial index's predicate matches. Captured one scope after the other, the second
//! becomes the first read path's scope, the condition a `{{fragment}}` filled per scope, so the
//! twin check applies to a captured project as to one written by hand.

use crate::sql::{self, Dialect, Token, TokenKind};

/// An existing plan and a new statement made one read path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// The fragment's name, as the plan's `{{name}}`.
    pub fragment: String,
    /// The plan file's new text: as it was, the condition replaced by (or the fragment added
    /// as) `{{name}}`.
    pub plan: String,
    /// The fragment's value for the scopes the expectation has already.
    pub existing: String,
    /// Its value for the scope captured now.
    pub new: String,
}

/// Words that end a condition: a clause, a join, a set operation.
const CLAUSE_WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "FETCH",
    "FOR",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "JOIN",
    "ON",
    "USING",
    "RETURNING",
    "WITH",
    "AND",
    "OR",
];

/// The merge of `plan` (an existing plan file's text, its comments kept) with `statement` when
/// the two say the same tokens but for one condition joined by `AND` (or a `WHERE` holding
/// only it) that one of them has; `None` otherwise, and for a plan that has fragments already.
/// Filled with the condition, the plan says exactly the tokens of the statement that has it;
/// filled with `true`, those of the other, a `true AND` beside.
pub fn one_condition_apart(plan: &str, statement: &str) -> Option<Merge> {
    if plan.contains("{{") {
        return None;
    }
    let dialect = Dialect::default();
    let a = without_semicolons(sql::significant(plan, dialect));
    let b = without_semicolons(sql::significant(statement, dialect));
    if a.len() == b.len() {
        return None;
    }
    let plan_has_it = a.len() > b.len();
    let (long, short, long_text) = if plan_has_it {
        (&a, &b, plan)
    } else {
        (&b, &a, statement)
    };
    let (at, lead, cond) = extra_condition(long, short)?;
    let span = |t: &[Token<'_>]| (t[0].start, t[t.len() - 1].start + t[t.len() - 1].text.len());
    let (from, to) = span(cond);
    let value = long_text[from..to].to_string();
    let fragment = fragment_name(cond);
    let placeholder = format!("{{{{{fragment}}}}}");
    let rewritten = if plan_has_it {
        format!("{}{placeholder}{}", &plan[..from], &plan[to..])
    } else {
        // Inserted where the statement has it, between the plan's tokens around it.
        let (at, text) = match lead.as_deref() {
            Some(w) => (
                a[at - 1].start + a[at - 1].text.len(),
                format!(" {w} {placeholder}"),
            ),
            None => (a[at].start, format!("{placeholder} AND ")),
        };
        format!("{}{text}{}", &plan[..at], &plan[at..])
    };
    let (existing, new) = if plan_has_it {
        (value, "true".to_string())
    } else {
        ("true".to_string(), value)
    };
    Some(Merge {
        fragment,
        plan: rewritten,
        existing,
        new,
    })
}

/// Two tokens compared as the grouper compares statements: a literal or parameter is any value
/// (the member's page bound `$1` where the moderator's sent `4`), a word in any case.
fn same(x: &Token<'_>, y: &Token<'_>) -> bool {
    let value = |t: &Token<'_>| {
        matches!(
            t.kind,
            TokenKind::String | TokenKind::Number | TokenKind::Param | TokenKind::BitString
        )
    };
    (value(x) && value(y))
        || x.kind == y.kind
            && (x.text == y.text
                || x.kind == TokenKind::Word && x.text.eq_ignore_ascii_case(y.text))
}

/// Where `long` says one condition more than `short`: the index in `short` where it goes, the
/// `AND`/`WHERE` before it (none when an `AND` follows it instead), and its tokens. The extra
/// tokens may start anywhere the two agree before and after them (`p.` of `p.deleted_at IS NULL
/// AND p.thread_id` is also the start of what follows); the first such place from the right
/// that is one condition joined by AND (`AND cond`, `cond AND`, `WHERE cond`), with a token of
/// `short` on the side it is joined to.
fn extra_condition<'l, 't>(
    long: &'l [Token<'t>],
    short: &[Token<'_>],
) -> Option<(usize, Option<String>, &'l [Token<'t>])> {
    let k = long.len() - short.len();
    let prefix = long
        .iter()
        .zip(short)
        .take_while(|(x, y)| same(x, y))
        .count();
    let word = |t: &Token<'_>| t.keyword().unwrap_or_default();
    (0..=prefix.min(short.len())).rev().find_map(|at| {
        if !long[at + k..]
            .iter()
            .zip(&short[at..])
            .all(|(x, y)| same(x, y))
        {
            return None;
        }
        let extra = &long[at..at + k];
        let (lead, cond) = match (extra.first().map(word), extra.last().map(word)) {
            (Some(w), _) if (w == "AND" || w == "WHERE") && at > 0 => (Some(w), &extra[1..]),
            (_, Some(w)) if w == "AND" && at < short.len() => (None, &extra[..extra.len() - 1]),
            _ => return None,
        };
        is_one_condition(cond).then_some((at, lead, cond))
    })
}

fn without_semicolons(mut tokens: Vec<Token<'_>>) -> Vec<Token<'_>> {
    while tokens
        .last()
        .is_some_and(|t| t.kind == TokenKind::Semicolon)
    {
        tokens.pop();
    }
    tokens
}

/// Whether `tokens` are one condition: not empty, parentheses balanced, and no clause, join,
/// `AND` or `OR` outside them.
fn is_one_condition(tokens: &[Token<'_>]) -> bool {
    if tokens.is_empty() {
        return false;
    }
    let mut depth = 0usize;
    for t in tokens {
        match (t.kind, t.text) {
            (TokenKind::Punct, "(") => depth += 1,
            (TokenKind::Punct, ")") => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ if depth == 0
                && t.keyword()
                    .is_some_and(|w| CLAUSE_WORDS.contains(&w.as_str())) =>
            {
                return false;
            }
            _ => {}
        }
    }
    depth == 0
}

/// The fragment's name: the column the condition compares (the last name before its first
/// operator), as a lower-case identifier; `condition` when it names none.
fn fragment_name(cond: &[Token<'_>]) -> String {
    const NOT_NAMES: &[&str] = &[
        "IS", "IN", "NOT", "LIKE", "ILIKE", "BETWEEN", "SIMILAR", "ANY", "ALL", "NULL", "TRUE",
        "FALSE", "EXISTS",
    ];
    let mut column = None;
    for t in cond {
        let stop = t.kind == TokenKind::Operator
            || t.kind == TokenKind::Punct && t.text == "("
            || t.keyword().is_some_and(|w| NOT_NAMES.contains(&w.as_str()));
        if stop {
            break;
        }
        if let Some(name) = t.identifier() {
            column = Some(name);
        }
    }
    column
        .map(|c| {
            c.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .filter(|c| c.starts_with(|c: char| c.is_ascii_lowercase()))
        .unwrap_or_else(|| "condition".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "-- Captured by `plancheck capture` from member.csv:3.\n";

    #[test]
    fn the_members_condition_becomes_a_fragment_the_moderator_fills_with_true() {
        let plan = format!(
            "{HEADER}SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = \
             'visible' ORDER BY p.created_at LIMIT 20\n"
        );
        let moderator =
            "SELECT p.id FROM posts p WHERE p.thread_id = $1 ORDER BY p.created_at LIMIT 20";
        let m = one_condition_apart(&plan, moderator).unwrap();
        assert_eq!(m.fragment, "visibility");
        assert_eq!(
            m.plan,
            format!(
                "{HEADER}SELECT p.id FROM posts p WHERE p.thread_id = $1 AND {{{{visibility}}}} \
                 ORDER BY p.created_at LIMIT 20\n"
            )
        );
        assert_eq!(m.existing, "p.visibility = 'visible'");
        assert_eq!(m.new, "true");
    }

    #[test]
    fn the_other_way_round_the_fragment_is_added_where_the_statement_has_it() {
        let plan = format!("{HEADER}SELECT p.id FROM posts p WHERE p.thread_id = $1 ORDER BY p.id");
        let member = "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' ORDER BY p.id";
        let m = one_condition_apart(&plan, member).unwrap();
        assert_eq!(
            m.plan,
            format!(
                "{HEADER}SELECT p.id FROM posts p WHERE p.thread_id = $1 AND {{{{visibility}}}} \
                 ORDER BY p.id"
            )
        );
        assert_eq!(
            (m.existing.as_str(), m.new.as_str()),
            ("true", "p.visibility = 'visible'")
        );
        // The condition first, and a WHERE holding only it.
        let member = "SELECT p.id FROM posts p WHERE p.deleted_at IS NULL AND p.thread_id = $1 ORDER BY p.id";
        let m = one_condition_apart(&plan, member).unwrap();
        assert_eq!(m.fragment, "deleted_at");
        assert!(
            m.plan.contains("WHERE {{deleted_at}} AND p.thread_id = $1"),
            "{}",
            m.plan
        );
        let plan = "SELECT t.id FROM threads t ORDER BY t.id";
        let m = one_condition_apart(
            plan,
            "SELECT t.id FROM threads t WHERE t.visible ORDER BY t.id",
        )
        .unwrap();
        assert_eq!(
            m.plan,
            "SELECT t.id FROM threads t WHERE {{visible}} ORDER BY t.id"
        );
        assert_eq!(m.new, "t.visible");
    }

    #[test]
    fn only_one_condition_apart_is_merged() {
        let plan = "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible'";
        for other in [
            // The same statement: nothing to merge.
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible'",
            // Two conditions apart.
            "SELECT id FROM posts",
            // A literal apart, not a condition (a value the grouper splits on: two paths).
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'deleted'",
            // An OR, not an AND.
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible' OR true",
            // Another clause, not a condition.
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible' LIMIT 5",
        ] {
            assert_eq!(one_condition_apart(plan, other), None, "{other}");
        }
        // A plan with fragments is left alone.
        assert_eq!(
            one_condition_apart("SELECT id FROM posts WHERE {{vis}}", "SELECT id FROM posts"),
            None
        );
        // A parenthesised condition with an OR inside is one condition.
        let m = one_condition_apart(
            plan,
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible' AND (a OR b)",
        )
        .unwrap();
        assert_eq!(m.new, "(a OR b)");
        assert_eq!(m.fragment, "condition");
    }

    #[test]
    fn values_and_parameters_are_any_value_as_the_grouper_compares() {
        let plan = "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible' LIMIT 20";
        let moderator = "select id from posts where thread_id = 4 limit 50";
        let m = one_condition_apart(plan, moderator).unwrap();
        assert_eq!(
            m.plan,
            "SELECT id FROM posts WHERE thread_id = $1 AND {{visibility}} LIMIT 20"
        );
    }

    #[test]
    fn an_extra_condition_with_nothing_to_join_it_to_is_not_merged() {
        // A trailing `x AND` (a cut log line) or a leading `WHERE x`: no plan token on the side
        // the condition is joined to, nowhere to put the fragment.
        assert_eq!(one_condition_apart("SELECT 1", "SELECT 1 x AND"), None);
        assert_eq!(one_condition_apart("SELECT 1", "WHERE x SELECT 1"), None);
    }

    #[test]
    fn filled_both_ways_the_plan_says_what_each_scope_sent() {
        let plan =
            "SELECT id FROM posts WHERE thread_id = $1 AND visibility = 'visible' ORDER BY id";
        let moderator = "SELECT id FROM posts WHERE thread_id = $1 ORDER BY id";
        let m = one_condition_apart(plan, moderator).unwrap();
        let fill = |v: &str| m.plan.replace(&format!("{{{{{}}}}}", m.fragment), v);
        assert_eq!(fill(&m.existing), plan);
        assert_eq!(
            fill(&m.new),
            "SELECT id FROM posts WHERE thread_id = $1 AND true ORDER BY id"
        );
    }
}
