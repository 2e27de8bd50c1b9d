//! Expressions as PostgreSQL prints them (EXPLAIN's `Index Cond` / `Filter`, `pg_get_expr` of an
//! index predicate), read into conjuncts that can be compared, and the few rules by which one
//! conjunct is shown to imply, or not to imply, another.
//!
//! The planner proves a partial index usable when each conjunct of its predicate is implied by
//! one of the query's conditions on the table (`predtest.c`). These rules are a small, sound part
//! of that: where they say "implied" the planner agrees, where they say "not implied" no single
//! condition can imply it, and everything else is left unsettled, never guessed.

use crate::sql::{Dialect, Token, TokenKind, significant};

/// One conjunct, normalised: qualifiers (`p.`, `public.posts.`) dropped, the casts EXPLAIN
/// prints on constants (`'visible'::text`, `'{a,b}'::text[]`) dropped, identifiers folded,
/// outer parentheses removed, tokens joined by single spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conjunct {
    pub text: String,
    tokens: Vec<Tok>,
}

/// A token of a normalised expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// An identifier or keyword, folded (`visibility`, `is`, `null`, `any`).
    Word(String),
    /// A string constant's value.
    Str(String),
    Num(String),
    Param(String),
    /// An operator or punctuation: `=`, `<>`, `(`, `::`, `[`.
    Sym(String),
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Word(w) => w.clone(),
            Tok::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Tok::Num(n) | Tok::Param(n) | Tok::Sym(n) => n.clone(),
        }
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self, Tok::Sym(x) if x == s)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self, Tok::Word(x) if x == w)
    }
}

/// Words that are never a column: keywords of expressions as PostgreSQL prints them.
const KEYWORDS: [&str; 27] = [
    "and", "or", "not", "is", "null", "true", "false", "any", "all", "array", "in", "like",
    "ilike", "similar", "to", "between", "distinct", "from", "unknown", "case", "when", "then",
    "asc", "desc", "nulls", "first", "last",
];

/// Type words that continue a type name after `::` (`character varying`, `double precision`,
/// `timestamp with time zone`).
const TYPE_WORDS: [&str; 6] = ["varying", "precision", "with", "without", "time", "zone"];

fn lex(expr: &str) -> Vec<Tok> {
    let dialect = Dialect::default();
    let raw: Vec<Token<'_>> = significant(expr, dialect);
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let t = &raw[i];
        let is_name = |t: &Token<'_>| matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent);
        // A qualifier: `name .` before another name.
        if is_name(t)
            && raw.get(i + 1).is_some_and(|d| d.text == ".")
            && raw.get(i + 2).is_some_and(is_name)
        {
            i += 2;
            continue;
        }
        let tok = match t.kind {
            TokenKind::Word | TokenKind::QuotedIdent => {
                Tok::Word(t.identifier().unwrap_or_else(|| t.text.to_string()))
            }
            TokenKind::String => Tok::Str(
                t.string_value(dialect)
                    .unwrap_or_else(|| t.text.to_string()),
            ),
            TokenKind::Number => Tok::Num(t.text.to_string()),
            TokenKind::Param => Tok::Param(t.text.to_string()),
            _ => Tok::Sym(t.text.to_string()),
        };
        let constant = matches!(tok, Tok::Str(_) | Tok::Num(_));
        out.push(tok);
        i += 1;
        // The cast EXPLAIN prints on a constant: `::type`, `::type[]`, `::character varying(10)`.
        if constant && raw.get(i).is_some_and(|t| t.text == "::") {
            i += 1;
            while raw.get(i).is_some_and(is_name) {
                let qualified = raw.get(i + 1).is_some_and(|d| d.text == ".");
                i += if qualified { 2 } else { 1 };
                if qualified {
                    continue;
                }
                if !raw
                    .get(i)
                    .and_then(|t| t.identifier())
                    .is_some_and(|w| TYPE_WORDS.contains(&w.as_str()))
                {
                    break;
                }
            }
            if raw.get(i).is_some_and(|t| t.text == "(") {
                while raw.get(i).is_some_and(|t| t.text != ")") {
                    i += 1;
                }
                i += 1;
            }
            while raw.get(i).is_some_and(|t| t.text == "[")
                && raw.get(i + 1).is_some_and(|t| t.text == "]")
            {
                i += 2;
            }
        }
    }
    out
}

/// The index of the `)` matching the `(` at `open`.
fn matching(tokens: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if t.is_sym("(") || t.is_sym("[") {
            depth += 1;
        } else if t.is_sym(")") || t.is_sym("]") {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

fn strip_parens(mut tokens: &[Tok]) -> &[Tok] {
    while tokens.len() >= 2
        && tokens[0].is_sym("(")
        && matching(tokens, 0) == Some(tokens.len() - 1)
    {
        tokens = &tokens[1..tokens.len() - 1];
    }
    tokens
}

/// The parts of `tokens` between the separators `is_separator` finds outside brackets.
fn split_on(tokens: &[Tok], is_separator: impl Fn(&Tok) -> bool) -> Vec<Vec<Tok>> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0i32;
    for t in tokens {
        if t.is_sym("(") || t.is_sym("[") {
            depth += 1;
        } else if t.is_sym(")") || t.is_sym("]") {
            depth -= 1;
        }
        if depth == 0 && is_separator(t) {
            parts.push(Vec::new());
        } else if let Some(last) = parts.last_mut() {
            last.push(t.clone());
        }
    }
    parts
}

/// Split at a top-level keyword (`and`, `or`).
fn split_top(tokens: &[Tok], word: &str) -> Vec<Vec<Tok>> {
    split_on(tokens, |t| t.is_word(word))
}

/// The tokens as a reader writes them: spaces around words and operators, none inside
/// brackets, before a comma, around `::` or between a function and its `(`.
fn render(tokens: &[Tok]) -> String {
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &tokens[j]);
        let tight = i == 0
            || t.is_sym(")")
            || t.is_sym("]")
            || t.is_sym(",")
            || t.is_sym("::")
            || prev.is_some_and(|p| p.is_sym("(") || p.is_sym("[") || p.is_sym("::"))
            || (t.is_sym("(") || t.is_sym("["))
                && prev.is_some_and(|p| matches!(p, Tok::Word(w) if !KEYWORDS.contains(&w.as_str()) || w == "array"));
        if !tight {
            out.push(' ');
        }
        match t {
            // Keywords as PostgreSQL prints them: `IS NULL`, `= ANY`, `NOT`.
            Tok::Word(w) if KEYWORDS.contains(&w.as_str()) => out.push_str(&w.to_uppercase()),
            _ => out.push_str(&t.text()),
        }
    }
    out
}

fn conjunct_of(tokens: &[Tok]) -> Conjunct {
    let tokens = strip_parens(tokens).to_vec();
    let text = render(&tokens);
    Conjunct { text, tokens }
}

/// The top-level AND conjuncts of a printed expression (a label such as `Filter: ` is
/// skipped), each normalised.
pub fn conjuncts(expr: &str) -> Vec<Conjunct> {
    let expr = ["Index Cond:", "Recheck Cond:", "Filter:"]
        .iter()
        .find_map(|l| expr.strip_prefix(l))
        .unwrap_or(expr);
    let tokens = lex(expr);
    let mut out: Vec<Conjunct> = Vec::new();
    let mut queue = vec![strip_parens(&tokens).to_vec()];
    while let Some(part) = queue.pop() {
        let parts = split_top(&part, "and");
        if parts.len() == 1 {
            let c = conjunct_of(&part);
            if !c.tokens.is_empty() && !out.contains(&c) {
                out.push(c);
            }
        } else {
            for p in parts.into_iter().rev() {
                queue.push(strip_parens(&p).to_vec());
            }
        }
    }
    out
}

/// Whether `expr`, normalised, mentions `what` (a column or an expression such as
/// `lower(email)`), token for token.
pub fn mentions(expr: &[Conjunct], what: &str) -> bool {
    let what = lex(what);
    let what = strip_parens(&what);
    !what.is_empty()
        && expr
            .iter()
            .any(|c| c.tokens.windows(what.len()).any(|w| w == what))
}

/// What a conjunct says of one column, where it has a form the rules know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `col = v` or `col = ANY (…)`: the values admitted.
    In(String, Vec<String>),
    /// `col <> v`.
    NotEqual(String),
    /// `col < v`, `col >= v`, `col ~~ v`, …: another comparison with a constant.
    Compare(String),
    /// `col IS NULL`.
    IsNull(String),
    /// `col IS NOT NULL`.
    IsNotNull(String),
    /// `col` or `NOT col`, for a boolean column.
    Bool(String, bool),
}

impl Form {
    pub fn column(&self) -> &str {
        match self {
            Form::In(c, _)
            | Form::NotEqual(c)
            | Form::Compare(c)
            | Form::IsNull(c)
            | Form::IsNotNull(c)
            | Form::Bool(c, _) => c,
        }
    }
}

fn plain_column(t: &[Tok]) -> Option<String> {
    match strip_parens(t) {
        [Tok::Word(w)] if !KEYWORDS.contains(&w.as_str()) => Some(w.clone()),
        _ => None,
    }
}

/// A constant, or a parameter (its value unknown to a generic plan; [`cannot_imply`] says so).
fn constant(t: &[Tok]) -> Option<String> {
    match strip_parens(t) {
        [Tok::Str(s)] | [Tok::Num(s)] | [Tok::Param(s)] => Some(s.clone()),
        [Tok::Sym(m), Tok::Num(n)] if m == "-" => Some(format!("-{n}")),
        _ => None,
    }
}

/// The elements of `'{a,b}'` (EXPLAIN) or `ARRAY['a', 'b']` (pg_get_expr).
fn array_elements(t: &[Tok]) -> Option<Vec<String>> {
    match strip_parens(t) {
        [Tok::Str(s)] if s.starts_with('{') && s.ends_with('}') => Some(
            s[1..s.len() - 1]
                .split(',')
                .map(|e| e.trim().trim_matches('"').to_string())
                .filter(|e| !e.is_empty())
                .collect(),
        ),
        [Tok::Word(a), Tok::Sym(open), rest @ .., Tok::Sym(close)]
            if a == "array" && open == "[" && close == "]" =>
        {
            let mut out = Vec::new();
            for part in split_sym(rest, ",") {
                out.push(constant(&part)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// Split at a top-level symbol (`,`).
fn split_sym(tokens: &[Tok], sym: &str) -> Vec<Vec<Tok>> {
    split_on(tokens, |t| t.is_sym(sym))
}

impl Conjunct {
    /// The conjunct with the casts that only relabel a column (`(language)::text` of a
    /// `character varying` column) taken off: `relabels(column, type)` says which do.
    pub fn relabelled(&self, relabels: &dyn Fn(&str, &str) -> bool) -> Conjunct {
        let t = &self.tokens;
        let mut out: Vec<Tok> = Vec::with_capacity(t.len());
        let mut i = 0;
        while i < t.len() {
            if let (Some(open), Some(Tok::Word(col)), Some(close), Some(cast), Some(Tok::Word(ty))) = (
                t.get(i),
                t.get(i + 1),
                t.get(i + 2),
                t.get(i + 3),
                t.get(i + 4),
            ) && open.is_sym("(")
                && close.is_sym(")")
                && cast.is_sym("::")
                && relabels(col, ty)
            {
                out.push(Tok::Word(col.clone()));
                i += 5;
                continue;
            }
            out.push(t[i].clone());
            i += 1;
        }
        conjunct_of(&out)
    }

    /// The conjunct's form over one plain column, when it has one the rules know.
    pub fn form(&self) -> Option<Form> {
        let t = &self.tokens[..];
        // `NOT col`, `col`
        if let [Tok::Word(not), rest @ ..] = t
            && not == "not"
            && let Some(c) = plain_column(rest)
        {
            return Some(Form::Bool(c, false));
        }
        if let Some(c) = plain_column(t) {
            return Some(Form::Bool(c, true));
        }
        // `col IS [NOT] NULL`
        if let [col @ .., Tok::Word(is), Tok::Word(null)] = t
            && is == "is"
            && null == "null"
        {
            return plain_column(col).map(Form::IsNull);
        }
        if let [col @ .., Tok::Word(is), Tok::Word(not), Tok::Word(null)] = t
            && is == "is"
            && not == "not"
            && null == "null"
        {
            return plain_column(col).map(Form::IsNotNull);
        }
        // `col op rhs` with one top-level operator.
        let at = t
            .iter()
            .position(|x| matches!(x, Tok::Sym(s) if is_operator(s)))?;
        let (lhs, op, rhs) = (&t[..at], &t[at], &t[at + 1..]);
        let column = plain_column(lhs)?;
        let Tok::Sym(op) = op else { return None };
        if op == "=" {
            if let [Tok::Word(any), rest @ ..] = rhs
                && any == "any"
            {
                return array_elements(rest).map(|e| Form::In(column, e));
            }
            return constant(rhs).map(|v| Form::In(column, vec![v]));
        }
        constant(rhs)?;
        if op == "<>" {
            return Some(Form::NotEqual(column));
        }
        Some(Form::Compare(column))
    }

    /// The columns the conjunct names, in order: words that are not keywords, not a function's
    /// name (followed by `(`) and not a type (after `::`).
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (i, t) in self.tokens.iter().enumerate() {
            let Tok::Word(w) = t else { continue };
            let function = self.tokens.get(i + 1).is_some_and(|n| n.is_sym("("));
            let typed = i > 0 && self.tokens[i - 1].is_sym("::");
            if !function && !typed && !KEYWORDS.contains(&w.as_str()) && !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
    }

    /// Whether the conjunct holds a `$n` parameter.
    pub fn has_parameter(&self) -> bool {
        self.tokens.iter().any(|t| matches!(t, Tok::Param(_)))
    }

    /// The functions the conjunct calls.
    pub fn functions(&self) -> Vec<String> {
        self.tokens
            .windows(2)
            .filter_map(|w| match (&w[0], &w[1]) {
                (Tok::Word(f), open) if open.is_sym("(") && !KEYWORDS.contains(&f.as_str()) => {
                    Some(f.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// How the conjunct wraps `column` where it does not compare it as it is: `(col)::text`
    /// (a cast), `f(col)` (a function). `None` when it names the column bare somewhere.
    pub fn wraps(&self, column: &str) -> Option<String> {
        let t = &self.tokens;
        let mut wrapped = None;
        let mut bare = false;
        for (i, tok) in t.iter().enumerate() {
            if !tok.is_word(column) || t.get(i + 1).is_some_and(|n| n.is_sym("(")) {
                continue;
            }
            let before = i.checked_sub(1).map(|j| &t[j]);
            let after = t.get(i + 1);
            if before.is_some_and(|b| b.is_sym("(")) && after.is_some_and(|a| a.is_sym(")")) {
                if let Some(Tok::Word(ty)) = t
                    .get(i + 3)
                    .filter(|_| t.get(i + 2).is_some_and(|c| c.is_sym("::")))
                {
                    wrapped = Some(format!("a cast to {ty}: ({column})::{ty}"));
                    continue;
                }
                if let Some(Tok::Word(f)) = i.checked_sub(2).map(|j| &t[j])
                    && !KEYWORDS.contains(&f.as_str())
                {
                    wrapped = Some(format!("{f}(): {f}({column})"));
                    continue;
                }
            }
            if let Some(Tok::Word(f)) = i.checked_sub(2).map(|j| &t[j])
                && before.is_some_and(|b| b.is_sym("("))
                && !KEYWORDS.contains(&f.as_str())
            {
                wrapped = Some(format!("{f}(): {f}({column}, …)"));
                continue;
            }
            bare = true;
        }
        if bare { None } else { wrapped }
    }
}

fn is_operator(s: &str) -> bool {
    s != "::"
        && s != "("
        && s != ")"
        && s != ","
        && s != "["
        && s != "]"
        && s != "."
        && s.chars().all(|c| "+-*/<>=~!@#%^&|`?".contains(c))
}

/// Whether `clause` (one of the query's conditions) implies `pred` (one conjunct of an index's
/// predicate) by a rule the planner also applies: the same expression, or an IN list (or
/// equality) admitting only values the predicate's admits, or a comparison of a column that
/// implies `IS NOT NULL` of it (strict operators).
pub fn implies(clause: &Conjunct, pred: &Conjunct) -> bool {
    if clause.text == pred.text {
        return true;
    }
    match (clause.form(), pred.form()) {
        (Some(Form::In(c, values)), Some(Form::In(p, allowed))) => {
            c == p && values.iter().all(|v| allowed.contains(v))
        }
        (Some(Form::In(c, _) | Form::NotEqual(c) | Form::Compare(c)), Some(Form::IsNotNull(p))) => {
            c == p
        }
        _ => false,
    }
}

/// Why `clause` cannot imply `pred`, when a rule shows it; `None` when it may.
// Long because it is one arm per rule, each a reason the planner cannot prove the predicate; kept together so the rules read as one list.
pub fn cannot_imply(
    clause: &Conjunct,
    pred: &Conjunct,
    non_immutable: &[String],
) -> Option<String> {
    let pred_form = pred.form()?;
    let column = pred_form.column().to_string();
    if clause.has_parameter() {
        return Some(format!(
            "a parameter stands where the predicate needs a constant (`{}`): the planner can \
             only match a partial index against constants, and a generic plan knows no \
             parameter values",
            clause.text
        ));
    }
    if let Some(f) = clause.functions().into_iter().find(|f| {
        non_immutable.contains(f) || matches!(f.as_str(), "now" | "current_setting" | "random")
    }) {
        return Some(format!(
            "{f}() is not IMMUTABLE (`{}`): its value is computed at run time, where the \
             predicate needs a constant",
            clause.text
        ));
    }
    if let Some(how) = clause.wraps(&column) {
        return Some(format!(
            "the query wraps {column} in {how} (`{}`), which the predicate `{}` does not: the \
             planner compares expressions, not values",
            clause.text, pred.text
        ));
    }
    let form = clause.form();
    match (&pred_form, &form) {
        (Form::In(p, allowed), Some(Form::In(c, values))) if p == c => {
            let wider: Vec<&String> = values.iter().filter(|v| !allowed.contains(v)).collect();
            (!wider.is_empty()).then(|| {
                format!(
                    "a widened predicate: the query admits {column} = {} (`{}`), which the \
                     predicate `{}` leaves out",
                    wider
                        .iter()
                        .map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    clause.text,
                    pred.text
                )
            })
        }
        (Form::In(p, _), Some(Form::NotEqual(c))) if p == c => Some(format!(
            "a widened predicate: `<>` on {column} (`{}`) admits rows the predicate `{}` leaves \
             out",
            clause.text, pred.text
        )),
        (Form::In(p, _), Some(Form::Compare(c))) if p == c => Some(format!(
            "a range on {column} (`{}`) cannot imply the predicate's equality `{}`",
            clause.text, pred.text
        )),
        (Form::IsNull(p), Some(Form::In(c, _) | Form::NotEqual(c) | Form::Compare(c)))
            if p == c =>
        {
            Some(format!(
                "the query compares {column} (`{}`), which excludes the NULLs the predicate `{}` \
                 keeps",
                clause.text, pred.text
            ))
        }
        (Form::Bool(p, want), Some(Form::Bool(c, have))) if p == c && want != have => {
            Some(format!(
                "the query asks for `{}`, the predicate for `{}`",
                clause.text, pred.text
            ))
        }
        _ if clause.text.contains(" OR ") && !pred.text.contains(" OR ") => {
            // An OR implies the predicate only if each of its arms does; one arm that does not
            // name the column cannot.
            let tokens = strip_parens(&clause.tokens);
            let arms = split_top(tokens, "or");
            let loose = arms.iter().any(|a| !mentions(&[conjunct_of(a)], &column));
            (arms.len() > 1 && loose).then(|| {
                format!(
                    "a widened predicate: an OR (`{}`) admits rows the predicate `{}` leaves out",
                    clause.text, pred.text
                )
            })
        }
        _ => None,
    }
}

/// Where the query's condition is a boolean test (`col IS FALSE`, `col IS NOT TRUE`, …) and the
/// predicate the same column compared as a boolean (`col = false`, `NOT col`, `col`): why the
/// planner's proof does not take one for the other. PostgreSQL reads `col = false` as `NOT col`
/// (an operator on the column) and `col IS FALSE` as a BooleanTest node, a different
/// expression its predicate proof does not match to it; said only where a re-plan showed the
/// index unused.
pub fn boolean_test_mismatch(clause: &Conjunct, pred: &Conjunct) -> Option<String> {
    let t = strip_parens(&clause.tokens);
    let (col, test) = match t {
        [col @ .., Tok::Word(is), Tok::Word(v)] if is == "is" && (v == "true" || v == "false") => {
            (plain_column(col)?, format!("IS {}", v.to_uppercase()))
        }
        [col @ .., Tok::Word(is), Tok::Word(not), Tok::Word(v)]
            if is == "is" && not == "not" && (v == "true" || v == "false") =>
        {
            (plain_column(col)?, format!("IS NOT {}", v.to_uppercase()))
        }
        _ => return None,
    };
    let p = strip_parens(&pred.tokens);
    let wanted = match p {
        [Tok::Word(not), rest @ ..] if not == "not" => plain_column(rest)?,
        [c @ .., Tok::Sym(eq), Tok::Word(v)] if eq == "=" && (v == "true" || v == "false") => {
            plain_column(c)?
        }
        _ => plain_column(p)?,
    };
    (wanted == col).then(|| {
        format!(
            "the query tests {col} {test} (`{}`), a boolean test, where the predicate compares \
             it (`{}`): the planner's predicate proof matches the predicate's operator form \
             only (it reads `{col} = false` as `NOT {col}`), never a boolean test, even one that \
             admits no other rows; write the condition as the predicate does (`{}`)",
            clause.text, pred.text, pred.text
        )
    })
}

/// Where the query matches the index's leading key with ILIKE (`~~*`) or a case-insensitive
/// regular expression (`~*`): what the planner does with one. The key's operator class is not
/// read here, so which one it is stays not settled.
pub fn case_insensitive_match(key: &str, known: &[Conjunct]) -> Option<String> {
    let key_text = conjuncts(key).into_iter().next()?.text;
    known.iter().find_map(|c| {
        let t = &c.tokens;
        let at = t
            .iter()
            .position(|x| matches!(x, Tok::Sym(s) if s == "~~*" || s == "~*"))?;
        let lhs = conjunct_of(&t[..at]).text;
        (lhs == key_text).then(|| {
            format!(
                "the query matches {key} case-insensitively (`{}`): a btree operator class has \
                 no such operator (only <, <=, =, >=, >), and the planner turns ILIKE into a \
                 range on a btree key only for a constant prefix with no letter in it; compare \
                 {key} with `=` (or a case-sensitive LIKE prefix on a text_pattern_ops key) \
                 instead. Which operators {key}'s operator class has is not read here: not \
                 settled for an index that is not a btree",
                c.text
            )
        })
    })
}

/// Where the index's leading key is an expression over a column (`lower(username)`) and the
/// query compares the bare column (`username = 'x'`): the planner matches an index key only
/// against the same expression.
pub fn raw_column_against_expression(key: &str, known: &[Conjunct]) -> Option<String> {
    let key_tokens = conjuncts(key).into_iter().next()?;
    if plain_column(&key_tokens.tokens).is_some() {
        return None;
    }
    let inside = key_tokens.columns();
    let raw = known.iter().find(|c| {
        c.form()
            .is_some_and(|f| inside.iter().any(|col| col == f.column()))
    })?;
    let col = raw.form()?.column().to_string();
    Some(format!(
        "the query compares the bare column {col} (`{}`), and the index's leading key is the \
         expression {key}: the planner matches an index key only against that same expression, \
         so the condition must be written on `{key}` (its value transformed likewise)",
        raw.text
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(expr: &str) -> Conjunct {
        let mut c = conjuncts(expr);
        assert_eq!(c.len(), 1, "{expr}: {c:?}");
        c.remove(0)
    }

    #[test]
    fn the_condition_that_fails_is_said_only_where_it_is_that_condition() {
        let pred = one("(filtered = false)");
        let why = boolean_test_mismatch(&one("Filter: (accounts.filtered IS FALSE)"), &pred);
        assert!(why.is_some_and(|w| w.contains("never a boolean test")));
        assert!(boolean_test_mismatch(&one("(accounts.hidden IS FALSE)"), &pred).is_none());
        assert!(boolean_test_mismatch(&one("(NOT accounts.filtered)"), &pred).is_none());

        let known = conjuncts("Filter: (accounts.username = 'User42'::text)");
        assert!(
            raw_column_against_expression("lower(username)", &known)
                .is_some_and(|w| w.contains("bare column username"))
        );
        assert!(raw_column_against_expression("username", &known).is_none());
        let other = conjuncts("Filter: (accounts.email = 'x'::text)");
        assert!(raw_column_against_expression("lower(username)", &other).is_none());

        let ilike = conjuncts("Filter: (lower(accounts.username) ~~* 'user42'::text)");
        assert!(case_insensitive_match("lower(username)", &ilike).is_some());
        let like = conjuncts("Filter: (lower(accounts.username) ~~ 'user42'::text)");
        assert!(case_insensitive_match("lower(username)", &like).is_none());
        assert!(case_insensitive_match("lower(email)", &ilike).is_none());
    }

    #[test]
    fn qualifiers_casts_on_constants_and_outer_parentheses_go() {
        assert_eq!(
            one("Filter: ((p.visibility)::text = 'visible'::text)").text,
            "(visibility)::text = 'visible'"
        );
        assert_eq!(
            one("(visibility = 'visible'::character varying(10))").text,
            "visibility = 'visible'"
        );
        assert_eq!(
            one("(public.accounts.deleted_at IS NULL)").text,
            "deleted_at IS NULL"
        );
        assert_eq!(
            one("(p.visibility = current_setting('app.v'::text))").text,
            "visibility = current_setting('app.v')"
        );
        assert_eq!(
            one("(state = ANY (ARRAY[0, 4]))").text,
            "state = ANY (ARRAY[0, 4])"
        );
        let split = conjuncts("((accounts.deleted_at IS NULL) AND (accounts.email = 'a'::text))");
        let texts: Vec<&str> = split.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["deleted_at IS NULL", "email = 'a'"]);
    }

    #[test]
    fn the_same_conjunct_implies_itself_across_print_styles() {
        let pred = one("(deleted_at IS NULL)");
        let cond =
            conjuncts("Filter: ((accounts.deleted_at IS NULL) AND (accounts.email = 'x'::text))");
        assert!(cond.iter().any(|c| implies(c, &pred)));
        let pred = one("(NOT outlier)");
        assert!(implies(&one("Filter: (NOT events.outlier)"), &pred));
        assert!(!implies(&one("Filter: events.outlier"), &pred));
    }

    #[test]
    fn in_lists_imply_by_subset_only() {
        let pred = one("(state_id = ANY (ARRAY[0, 4, 5]))");
        assert!(implies(&one("(i.state_id = 4)"), &pred));
        assert!(implies(
            &one("(i.state_id = ANY ('{0,5}'::integer[]))"),
            &pred
        ));
        let wide = one("(i.state_id = ANY ('{0,4,5,15,17}'::integer[]))");
        assert!(!implies(&wide, &pred));
        let why = cannot_imply(&wide, &pred, &[]).unwrap();
        assert!(why.contains("15, 17"), "{why}");
        let pred = one("(visibility = ANY (ARRAY['visible'::text, 'unapproved'::text]))");
        assert!(implies(
            &one("(p.visibility = ANY ('{visible,unapproved}'::text[]))"),
            &pred
        ));
    }

    #[test]
    fn a_comparison_implies_is_not_null() {
        let pred = one("(email IS NOT NULL)");
        assert!(implies(&one("(a.email = 'x'::text)"), &pred));
        assert!(implies(&one("(a.email <> 'x'::text)"), &pred));
        assert!(cannot_imply(&one("(a.email = 'x'::text)"), &pred, &[]).is_none());
    }

    #[test]
    fn causes_come_from_the_parsed_conjuncts() {
        let pred = one("(visibility = 'visible'::text)");
        let c = |s: &str| cannot_imply(&one(s), &pred, &[]);
        assert!(c("(p.visibility = $2)").unwrap().contains("parameter"));
        assert!(
            c("(p.visibility = current_setting('app.v'::text))")
                .unwrap()
                .contains("current_setting")
        );
        assert!(
            c("(p.visibility <> 'deleted'::text)")
                .unwrap()
                .contains("`<>`")
        );
        assert!(
            c("((p.visibility)::bpchar = 'visible'::bpchar)")
                .unwrap()
                .contains("a cast to bpchar")
        );
        assert!(
            c("((p.visibility = 'visible'::text) OR (p.thread_id = 1))")
                .unwrap()
                .contains("OR")
        );
        assert!(c("(p.visibility = 'visible'::text)").is_none());
        let stable = cannot_imply(
            &one("(p.visibility = app.current_visibility())"),
            &pred,
            &["current_visibility".to_string()],
        );
        assert!(
            stable
                .unwrap()
                .contains("current_visibility() is not IMMUTABLE")
        );
    }

    #[test]
    fn keywords_operators_and_functions_are_never_columns() {
        assert_eq!(one("(NOT outlier)").columns(), ["outlier"]);
        assert_eq!(one("(deleted_at IS NULL)").columns(), ["deleted_at"]);
        assert_eq!(one("(lower(email) = 'a'::text)").columns(), ["email"]);
        assert_eq!(
            one("((account_id)::text = '42'::text)").columns(),
            ["account_id"]
        );
        assert_eq!(
            one("((account_id)::text = '42'::text)")
                .wraps("account_id")
                .unwrap(),
            "a cast to text: (account_id)::text"
        );
        assert_eq!(
            one("(lower(email) = 'a'::text)").wraps("email").unwrap(),
            "lower(): lower(email)"
        );
        assert!(one("(account_id = 42)").wraps("account_id").is_none());
    }

    #[test]
    fn a_cast_that_only_relabels_a_column_is_set_aside() {
        let varchar = |col: &str, ty: &str| col == "language" && ty == "text";
        let c = one("((s.language)::text = ANY ('{en,de}'::text[]))").relabelled(&varchar);
        assert_eq!(c.text, "language = ANY ('{en,de}')");
        assert!(matches!(c.form(), Some(Form::In(col, v)) if col == "language" && v.len() == 2));
        // A cast to another type stays: it changes what is compared.
        let c = one("((a.account_id)::text = '42'::text)").relabelled(&varchar);
        assert_eq!(
            c.wraps("account_id").unwrap(),
            "a cast to text: (account_id)::text"
        );
    }

    #[test]
    fn mentions_matches_whole_expressions() {
        let c = conjuncts("Index Cond: ((issues.project_id = 278964) AND (issues.state_id = 1))");
        assert!(mentions(&c, "project_id"));
        assert!(mentions(&c, "state_id"));
        assert!(!mentions(&c, "state"));
        let c = conjuncts("Index Cond: (lower(a.email) = 'x'::text)");
        assert!(mentions(&c, "lower(email)"));
        assert!(mentions(&c, "(lower(email))"));
    }
}
