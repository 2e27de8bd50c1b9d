//! The typed model of `EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON)` output, and the walk
//! over its whole tree. Pure: no database, no printing.
//!
//! The JSON differs between PostgreSQL versions (18 prints `Actual Rows` as a fraction and adds
//! `Disabled` and `Index Searches`; 17 renamed the InitPlan labels), so the model is read
//! tolerantly: unknown keys are ignored and every number is a float. A saved document is read
//! from its `serde_json::Value` ([`Explain::from_json`]); the server's text straight into the
//! model ([`Explain::parse`], which reads what the tree reader reads).
//!
//! Every part of a plan hangs off a node's `Plans` array: outer and inner children, InitPlans,
//! SubPlans, CTE definitions (which are InitPlans), Append and MergeAppend members, the Bitmap
//! Index Scans under a Bitmap Heap Scan (directly or through BitmapAnd / BitmapOr), and the
//! workers' plan under Gather. Walking `Plans` recursively therefore visits every scan.

use serde_json::Value;

/// One `EXPLAIN` document: the plan tree and the run's summary figures.
#[derive(Debug, Clone)]
pub struct Explain {
    pub root: PlanNode,
    /// `Planning Time`, in milliseconds.
    pub planning_ms: Option<f64>,
    /// `Execution Time`, in milliseconds (present only with ANALYZE).
    pub execution_ms: Option<f64>,
}

/// One node of the plan tree, with the fields plancheck reads.
#[derive(Debug, Clone, Default)]
pub struct PlanNode {
    pub node_type: String,
    pub parent_relationship: Option<String>,
    pub subplan_name: Option<String>,
    pub relation: Option<String>,
    pub schema: Option<String>,
    pub alias: Option<String>,
    pub index_name: Option<String>,
    pub scan_direction: Option<String>,
    /// `Join Type` of a join node: `Inner`, `Left`, `Anti`, ….
    pub join_type: Option<String>,
    /// `Sort Key` of a Sort (or Incremental Sort) node, as printed: `p.created_at DESC`.
    pub sort_key: Vec<String>,
    pub index_cond: Option<String>,
    pub recheck_cond: Option<String>,
    pub filter: Option<String>,
    pub parallel_aware: bool,
    pub total_cost: f64,
    pub plan_rows: f64,
    pub actual_rows: Option<f64>,
    pub actual_loops: Option<f64>,
    pub rows_removed_by_filter: Option<f64>,
    pub rows_removed_by_index_recheck: Option<f64>,
    /// How much a loop's printed row figures may fall short of the truth: EXPLAIN prints each
    /// divided by the loops and rounded, so half its last printed digit, summed over the
    /// figures (0.5 for a whole number: `Rows Removed by …`, and `Actual Rows` up to 17;
    /// 0.005 for `Actual Rows` on 18, printed with two decimals).
    pub rows_rounding: f64,
    /// PostgreSQL 18 marks nodes whose path was disabled (`enable_seqscan = off`, …).
    pub disabled: Option<bool>,
    pub shared_hit_blocks: f64,
    pub shared_read_blocks: f64,
    pub children: Vec<PlanNode>,
}

/// The ways plancheck tells scans apart. Every other node type is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    Seq,
    Index,
    IndexOnly,
    BitmapIndex,
    BitmapHeap,
    /// A Tid Scan (`ctid = …`, `ctid = ANY (…)`): as many rows as it is given, judged by the
    /// rows it read.
    Tid,
    Other,
}

/// A scan found anywhere in the tree, with the relation it reads resolved (a Bitmap Index Scan
/// names only its index; its relation is that of the Bitmap Heap Scan above it).
#[derive(Debug, Clone)]
pub struct Scan<'a> {
    pub kind: ScanKind,
    pub node: &'a PlanNode,
    pub relation: Option<&'a str>,
    pub schema: Option<&'a str>,
    /// The scan never ran (`Actual Loops: 0`) for a reason other than its join's outer side
    /// finding no rows: an Append branch a LIMIT never reached or run-time pruning dropped, a
    /// branch a `One-Time Filter` (the parameters alone) switched off, a subplan never needed.
    /// For these parameters the plan did not read through it. A scan that never ran only
    /// because the outer side of its join found no rows (most inner sides on a CI database of
    /// a few rows) is still the plan's way to its rows, and is not skipped.
    pub skipped: bool,
}

/// Why a node never ran, as the scans below it inherit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotRun {
    /// It ran (or the plan was not executed, and says nothing of it).
    Ran,
    /// It never ran only because the outer side of the join above it found no rows.
    ForWantOfOuterRows,
    /// It never ran for another reason.
    Skipped,
}

impl ScanKind {
    fn of(node_type: &str) -> ScanKind {
        match node_type {
            // A TABLESAMPLE scan and a TID range scan read a relation's pages in order, without
            // an index: what a reader of the plan must treat as a seq scan (a sample of 100
            // percent, a range from the first page, are the whole table).
            "Seq Scan" | "Sample Scan" | "Tid Range Scan" => ScanKind::Seq,
            "Index Scan" => ScanKind::Index,
            "Index Only Scan" => ScanKind::IndexOnly,
            "Bitmap Index Scan" => ScanKind::BitmapIndex,
            "Bitmap Heap Scan" => ScanKind::BitmapHeap,
            "Tid Scan" => ScanKind::Tid,
            _ => ScanKind::Other,
        }
    }

    /// Scans that read an index by name.
    pub fn uses_index(self) -> bool {
        matches!(
            self,
            ScanKind::Index | ScanKind::IndexOnly | ScanKind::BitmapIndex
        )
    }
}

/// Why a document could not be read as a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainError(pub String);

impl std::fmt::Display for ExplainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unreadable EXPLAIN output: {}", self.0)
    }
}

impl std::error::Error for ExplainError {}

/// How deep a document may nest. Each plan level takes two (the node and its `Plans` array), so
/// this admits plans 500 nodes deep, the limit [`PlanNode`] enforces; serde_json's own limit
/// (128) would refuse real plans of 40 nested subqueries.
const MAX_JSON_DEPTH: usize = 1002;

/// How deep a plan may nest, in nodes: plans are never this deep; a document that is has been
/// made to crash a reader.
pub(crate) const MAX_PLAN_DEPTH: usize = 500;

/// Refuses JSON text nested deeper than [`MAX_JSON_DEPTH`], before it is parsed, so that a parser
/// without a recursion limit never overflows the stack. Skips from one bracket or quote to the
/// next, and through a string to its closing quote: most of an EXPLAIN document is indentation
/// and key names.
fn check_depth(text: &str) -> Result<(), ExplainError> {
    static SPECIAL: [bool; 256] = {
        let mut t = [false; 256];
        t[b'"' as usize] = true;
        t[b'[' as usize] = true;
        t[b'{' as usize] = true;
        t[b']' as usize] = true;
        t[b'}' as usize] = true;
        t
    };
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(rest) = bytes.get(at..) {
        let Some(skip) = rest.iter().position(|&b| SPECIAL[b as usize]) else {
            break;
        };
        at += skip;
        match bytes[at] {
            b'"' => {
                // To the quote that closes the string: a backslash escapes the byte after it.
                at += 1;
                loop {
                    let Some(rest) = bytes.get(at..) else {
                        return Ok(());
                    };
                    let Some(skip) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
                        return Ok(());
                    };
                    at += skip;
                    if bytes[at] == b'"' {
                        break;
                    }
                    at += 2;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(ExplainError(format!(
                        "JSON nested more than {MAX_JSON_DEPTH} levels"
                    )));
                }
            }
            _ => depth = depth.saturating_sub(1),
        }
        at += 1;
    }
    Ok(())
}

/// Parses JSON text of bounded depth. The depth is measured before parsing, so the parser can
/// run without its recursion limit and still never overflow the stack.
pub fn parse_json(text: &str) -> Result<Value, ExplainError> {
    check_depth(text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = <Value as serde::Deserialize>::deserialize(&mut de)
        .map_err(|e| ExplainError(format!("invalid JSON: {e}")))?;
    de.end()
        .map_err(|e| ExplainError(format!("invalid JSON: {e}")))?;
    Ok(value)
}

impl Explain {
    /// Reads the value `EXPLAIN (FORMAT JSON)` returns: an array holding one object with `Plan`.
    pub fn from_json(value: &Value) -> Result<Explain, ExplainError> {
        let top = match value {
            Value::Array(items) => items
                .first()
                .ok_or_else(|| ExplainError("an empty array".into()))?,
            Value::Object(_) => value,
            _ => return Err(ExplainError("neither an array nor an object".into())),
        };
        let plan = top
            .get("Plan")
            .ok_or_else(|| ExplainError("no \"Plan\" key".into()))?;
        Ok(Explain {
            root: PlanNode::from_json(plan, 0)?,
            planning_ms: top.get("Planning Time").and_then(Value::as_f64),
            execution_ms: top.get("Execution Time").and_then(Value::as_f64),
        })
    }

    /// Parses the text of an EXPLAIN JSON document straight into the model, reading what
    /// [`Explain::from_json`] reads from the tree without building the tree
    /// ([`super::stream`]).
    pub fn parse(text: &str) -> Result<Explain, ExplainError> {
        check_depth(text)?;
        super::stream::read(text)
    }

    /// Every node, depth first, root first.
    pub fn nodes(&self) -> Vec<&PlanNode> {
        let mut out = Vec::new();
        fn walk<'a>(n: &'a PlanNode, out: &mut Vec<&'a PlanNode>) {
            out.push(n);
            for c in &n.children {
                walk(c, out);
            }
        }
        walk(&self.root, &mut out);
        out
    }

    /// Every scan in the tree, with Bitmap Index Scans given the relation of their heap scan.
    pub fn scans(&self) -> Vec<Scan<'_>> {
        let mut out = Vec::new();
        fn walk<'a>(
            n: &'a PlanNode,
            heap: Option<(&'a str, Option<&'a str>)>,
            not_run: NotRun,
            out: &mut Vec<Scan<'a>>,
        ) {
            let kind = ScanKind::of(&n.node_type);
            let own = n.relation.as_deref().map(|r| (r, n.schema.as_deref()));
            let (relation, schema) = match (kind, own, heap) {
                (_, Some((r, s)), _) => (Some(r), s),
                (ScanKind::BitmapIndex, None, Some((r, s))) => (Some(r), s),
                _ => (None, None),
            };
            if kind != ScanKind::Other {
                out.push(Scan {
                    kind,
                    node: n,
                    relation,
                    schema,
                    skipped: not_run == NotRun::Skipped,
                });
            }
            // The heap relation flows down to the bitmap index scans, through BitmapAnd/BitmapOr,
            // and stops at any other node.
            let below = match kind {
                ScanKind::BitmapHeap => own,
                ScanKind::Other if n.node_type == "BitmapAnd" || n.node_type == "BitmapOr" => heap,
                _ => None,
            };
            // A join that ran and whose outer side (its first child) found no rows never runs
            // its inner side.
            let outer_found_nothing = matches!(
                n.node_type.as_str(),
                "Nested Loop" | "Hash Join" | "Merge Join"
            ) && n.actual_loops.is_some_and(|l| l > 0.0)
                && n.children
                    .first()
                    .is_some_and(|o| o.actual_rows == Some(0.0));
            for (i, c) in n.children.iter().enumerate() {
                // Where a node that ran has a child that never did, that child says why for
                // everything below it.
                let why = if not_run != NotRun::Ran || c.actual_loops != Some(0.0) {
                    not_run
                } else if i > 0 && outer_found_nothing {
                    NotRun::ForWantOfOuterRows
                } else {
                    NotRun::Skipped
                };
                walk(c, below, why, out);
            }
        }
        walk(&self.root, None, NotRun::Ran, &mut out);
        out
    }

    /// Whether a scan of the plan reads one of the indexes named.
    pub fn reads_any(&self, index_names: &[&str]) -> bool {
        self.scans().iter().any(|s| {
            s.kind.uses_index()
                && !s.skipped
                && s.node
                    .index_name
                    .as_deref()
                    .is_some_and(|n| index_names.contains(&n))
        })
    }

    /// The conditions the plan applied to `table`, as EXPLAIN prints them: `Index Cond: (…)`,
    /// `Recheck Cond: (…)`, `Filter: (…)`, in plan order, without repeats.
    pub fn conditions_on(&self, table: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.scans() {
            if s.relation != Some(table) {
                continue;
            }
            let n = s.node;
            for (label, cond) in [
                ("Index Cond", &n.index_cond),
                ("Recheck Cond", &n.recheck_cond),
                ("Filter", &n.filter),
            ] {
                if let Some(c) = cond {
                    let text = format!("{label}: {c}");
                    if !out.contains(&text) {
                        out.push(text);
                    }
                }
            }
        }
        out
    }

    /// Shared buffers touched by the whole statement (hit + read), read from the root, whose
    /// figures include every child's.
    pub fn shared_buffers(&self) -> f64 {
        self.root.shared_hit_blocks + self.root.shared_read_blocks
    }
}

impl PlanNode {
    fn from_json(v: &Value, depth: usize) -> Result<PlanNode, ExplainError> {
        if depth > MAX_PLAN_DEPTH {
            return Err(ExplainError(format!(
                "plan nested more than {MAX_PLAN_DEPTH} levels"
            )));
        }
        let obj = v
            .as_object()
            .ok_or_else(|| ExplainError("a plan node that is not an object".into()))?;
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let f = |k: &str| obj.get(k).and_then(Value::as_f64);
        let node_type =
            s("Node Type").ok_or_else(|| ExplainError("a node without \"Node Type\"".into()))?;
        let mut children = Vec::new();
        if let Some(plans) = obj.get("Plans") {
            let plans = plans
                .as_array()
                .ok_or_else(|| ExplainError("\"Plans\" is not an array".into()))?;
            for p in plans {
                children.push(PlanNode::from_json(p, depth + 1)?);
            }
        }
        Ok(PlanNode {
            node_type,
            parent_relationship: s("Parent Relationship"),
            subplan_name: s("Subplan Name"),
            relation: s("Relation Name"),
            schema: s("Schema"),
            alias: s("Alias"),
            index_name: s("Index Name"),
            scan_direction: s("Scan Direction"),
            join_type: s("Join Type"),
            sort_key: obj
                .get("Sort Key")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| k.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            index_cond: s("Index Cond"),
            recheck_cond: s("Recheck Cond"),
            filter: s("Filter"),
            parallel_aware: obj
                .get("Parallel Aware")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            total_cost: f("Total Cost").unwrap_or(0.0),
            plan_rows: f("Plan Rows").unwrap_or(0.0),
            actual_rows: f("Actual Rows"),
            actual_loops: f("Actual Loops"),
            rows_removed_by_filter: f("Rows Removed by Filter"),
            rows_removed_by_index_recheck: f("Rows Removed by Index Recheck"),
            rows_rounding: [
                "Actual Rows",
                "Rows Removed by Filter",
                "Rows Removed by Index Recheck",
            ]
            .iter()
            .map(|k| match obj.get(*k) {
                Some(Value::Number(n)) if n.is_f64() => 0.005,
                Some(Value::Number(_)) => 0.5,
                _ => 0.0,
            })
            .sum(),
            disabled: obj.get("Disabled").and_then(Value::as_bool),
            shared_hit_blocks: f("Shared Hit Blocks").unwrap_or(0.0),
            shared_read_blocks: f("Shared Read Blocks").unwrap_or(0.0),
            children,
        })
    }

    /// The name a reader knows this node by: `Parallel Seq Scan`, `Index Scan Backward`, ….
    pub fn label(&self) -> String {
        let mut label = String::new();
        if self.parallel_aware {
            label.push_str("Parallel ");
        }
        match self.join_type.as_deref() {
            // As EXPLAIN's text format names joins: `Nested Loop Anti Join`, `Hash Left Join`.
            Some(join) if join != "Inner" => {
                label.push_str(self.node_type.trim_end_matches(" Join"));
                label.push_str(&format!(" {join} Join"));
            }
            _ => label.push_str(&self.node_type),
        }
        if self.scan_direction.as_deref() == Some("Backward") {
            label.push_str(" Backward");
        }
        label
    }

    /// Rows this node read in all its loops: the ones it returned plus the ones its Filter and
    /// its index recheck removed (for a Bitmap Heap Scan: every row it fetched from the heap).
    /// `None` without ANALYZE figures.
    pub fn rows_visited(&self) -> Option<f64> {
        let rows = self.actual_rows?;
        let loops = self.actual_loops.unwrap_or(1.0).max(0.0);
        let removed = self.rows_removed_by_filter.unwrap_or(0.0)
            + self.rows_removed_by_index_recheck.unwrap_or(0.0);
        // PostgreSQL prints `Actual Rows` and both `Rows Removed by …` divided by the number of
        // loops (a fraction on 18, rounded up to 17), so the total is their sum times the loops.
        // A parallel-aware node counts every participant as a loop (the leader and each
        // worker), so the same product is what all of them read together.
        Some((rows + removed) * loops)
    }

    /// The most rows this node can have read in all its loops, given that a loop's figures are
    /// printed rounded: a lookup looped 300,000 times that found a row 4 times in 10 prints
    /// `0` rows a loop up to 17, as if it read nothing. One loop's figures are exact.
    pub fn rows_visited_at_most(&self) -> Option<f64> {
        let visited = self.rows_visited()?;
        let loops = self.actual_loops.unwrap_or(1.0);
        Some(if loops > 1.0 {
            visited + self.rows_rounding * loops
        } else {
            visited
        })
    }

    /// Rows one pass of this node read: all its loops together for a parallel-aware node (its
    /// participants share one scan), one loop's otherwise. A pass cannot read more rows than
    /// its relation holds, so this is a floor under the relation's size.
    pub fn rows_in_one_pass(&self) -> Option<f64> {
        let all = self.rows_visited()?;
        let loops = self.actual_loops.unwrap_or(1.0);
        Some(if self.parallel_aware || loops <= 1.0 {
            all
        } else {
            all / loops
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bitmap_index_scan_gets_the_heap_relation_through_bitmap_or() {
        let doc = json!([{ "Plan": {
            "Node Type": "Bitmap Heap Scan", "Relation Name": "posts", "Schema": "public",
            "Plans": [{ "Node Type": "BitmapOr", "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "a_idx" },
                { "Node Type": "Bitmap Index Scan", "Index Name": "b_idx" }
            ]}]
        }}]);
        let e = Explain::from_json(&doc).unwrap();
        let scans = e.scans();
        let bitmap: Vec<_> = scans
            .iter()
            .filter(|s| s.kind == ScanKind::BitmapIndex)
            .collect();
        assert_eq!(bitmap.len(), 2);
        assert!(bitmap.iter().all(|s| s.relation == Some("posts")));
        assert!(bitmap.iter().all(|s| s.schema == Some("public")));
    }

    #[test]
    fn index_scan_under_a_nested_loop_does_not_inherit_a_heap_relation() {
        let doc = json!([{ "Plan": {
            "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
            "Plans": [{ "Node Type": "Nested Loop", "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "a_idx" }
            ]}]
        }}]);
        let e = Explain::from_json(&doc).unwrap();
        let s = e
            .scans()
            .into_iter()
            .find(|s| s.kind == ScanKind::BitmapIndex)
            .unwrap();
        assert_eq!(s.relation, None);
    }

    #[test]
    fn fractional_actual_rows_from_postgresql_18_are_read() {
        let doc = json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "t",
            "Actual Rows": 0.5, "Actual Loops": 4, "Rows Removed by Filter": 10 } ,
            "Execution Time": 1.25, "Planning Time": 0.1 }]);
        let e = Explain::from_json(&doc).unwrap();
        assert_eq!(e.root.rows_visited(), Some(42.0));
        assert_eq!(e.root.rows_in_one_pass(), Some(10.5));
        assert_eq!(e.execution_ms, Some(1.25));
    }

    #[test]
    fn rows_read_count_the_index_recheck_and_every_parallel_participant() {
        // A Bitmap Heap Scan read what it returned, what its Filter removed and what the
        // recheck of a lossy page removed.
        let doc = json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "t",
            "Actual Rows": 10, "Actual Loops": 1, "Rows Removed by Filter": 5,
            "Rows Removed by Index Recheck": 85 } }]);
        let e = Explain::from_json(&doc).unwrap();
        assert_eq!(e.root.rows_visited(), Some(100.0));
        // Three participants of a parallel scan read 3 × 30 rows between them, in one pass.
        let doc = json!([{ "Plan": { "Node Type": "Index Scan", "Relation Name": "t",
            "Parallel Aware": true, "Actual Rows": 20, "Actual Loops": 3,
            "Rows Removed by Filter": 10 } }]);
        let e = Explain::from_json(&doc).unwrap();
        assert_eq!(e.root.rows_visited(), Some(90.0));
        assert_eq!(e.root.rows_in_one_pass(), Some(90.0));
        // Up to 17 a loop's rows are rounded to a whole number: 0 rows a loop over 300,000
        // loops is anything under 150,000 rows. 18 prints two decimals.
        let doc = json!([{ "Plan": { "Node Type": "Index Scan", "Relation Name": "t",
            "Actual Rows": 0, "Actual Loops": 300_000 } }]);
        let e = Explain::from_json(&doc).unwrap();
        assert_eq!(e.root.rows_visited(), Some(0.0));
        assert_eq!(e.root.rows_visited_at_most(), Some(150_000.0));
        let doc = json!([{ "Plan": { "Node Type": "Index Scan", "Relation Name": "t",
            "Actual Rows": 0.39, "Actual Loops": 300_000 } }]);
        let e = Explain::from_json(&doc).unwrap();
        let most = e.root.rows_visited_at_most().unwrap();
        assert!((most - 118_500.0).abs() < 1e-6, "{most}");
        // A node that never ran read nothing.
        let doc = json!([{ "Plan": { "Node Type": "Index Scan", "Relation Name": "t",
            "Actual Rows": 0, "Actual Loops": 0 } }]);
        let e = Explain::from_json(&doc).unwrap();
        assert_eq!(e.root.rows_visited(), Some(0.0));
    }

    #[test]
    fn documents_without_a_plan_are_errors_not_empty_plans() {
        assert!(Explain::parse("[]").is_err());
        assert!(Explain::parse("[{}]").is_err());
        assert!(Explain::parse("[{\"Plan\": {}}]").is_err());
        assert!(Explain::parse("[{\"Plan\": {\"Node Type\": \"Result\", \"Plans\": 3}}]").is_err());
        assert!(Explain::parse("not json").is_err());
    }

    #[test]
    fn absurdly_deep_documents_are_refused_without_overflowing_the_stack() {
        let mut text = String::from("{\"Node Type\": \"Result\"}");
        for _ in 0..600 {
            text = format!("{{\"Node Type\": \"Result\", \"Plans\": [{text}]}}");
        }
        // 600 plan levels: past the node limit; an error, not a crash.
        assert!(Explain::parse(&format!("[{{\"Plan\": {text}}}]")).is_err());
        // And JSON nested past the depth limit is refused before it is parsed.
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(
            parse_json(&deep)
                .unwrap_err()
                .0
                .contains("nested more than")
        );
    }

    /// The depth check as it was first written, a byte at a time: the skipping one must agree.
    fn depth_a_byte_at_a_time(text: &str) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for b in text.bytes() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_JSON_DEPTH {
                        return false;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        true
    }

    #[test]
    fn the_depth_check_skips_strings_as_a_byte_by_byte_reader_does() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let within = deep(MAX_JSON_DEPTH);
        let past = deep(MAX_JSON_DEPTH + 1);
        let in_string = format!("[\"{}\"]", "[".repeat(5000));
        let escaped_quote = format!("[\"a\\\"{}\"]", "{".repeat(5000));
        let escaped_backslash = format!("[\"a\\\\\"{}]", "{".repeat(5000));
        let unterminated = format!("[\"{}", "[".repeat(5000));
        let trailing_backslash = "[\"abc\\".to_string();
        let closed_then_deep = format!("{}{}", "[]".repeat(3000), deep(MAX_JSON_DEPTH + 1));
        for text in [
            within,
            past,
            in_string,
            escaped_quote,
            escaped_backslash,
            unterminated,
            trailing_backslash,
            closed_then_deep,
            String::new(),
            "\"".into(),
            "]]]{".into(),
        ] {
            assert_eq!(
                check_depth(&text).is_ok(),
                depth_a_byte_at_a_time(&text),
                "{}",
                &text[..text.len().min(40)]
            );
        }
    }

    #[test]
    fn a_plan_80_nodes_deep_is_read() {
        // Past serde_json's default recursion limit of 128, which real plans reach.
        let mut text = String::from("{\"Node Type\": \"Result\"}");
        for _ in 0..80 {
            text = format!("{{\"Node Type\": \"Subquery Scan\", \"Plans\": [{text}]}}");
        }
        let plan = Explain::parse(&format!("[{{\"Plan\": {text}}}]")).unwrap();
        assert_eq!(plan.nodes().len(), 81);
    }
}
