//! `EXPLAIN (FORMAT JSON)` text read straight into the plan model ([`Explain`]), without the
//! JSON tree in between: only the keys the model keeps become values, every other one is
//! skipped as it is read. A check reads four or more documents of kilobytes each; building
//! the tree (a map and a string for every key of every node) and dropping it was a third of
//! plancheck's own instructions (BENCHMARKS.md).
//!
//! It reads exactly what [`Explain::from_json`] reads from the tree, with the same tolerance
//! (a key of an unexpected type counts as absent), the same errors in the same order, and the
//! same answer for a key written twice (the last one). `tests::reads_what_the_tree_reads`
//! holds the two to each other on real plans of PostgreSQL 15 and 18.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::explain::{Explain, ExplainError, MAX_PLAN_DEPTH, PlanNode};

/// The scalar visits of a visitor that answers `$value` (called with the visitor) to any string,
/// number, boolean or null.
macro_rules! scalars {
    ($value:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(($value)(&self))
        }
    };
}

/// Reads `text`, whose nesting [`super::explain::parse_json`]'s bound was already checked (the
/// reader recurses once per level, with no limit of its own).
pub(super) fn read(text: &str) -> Result<Explain, ExplainError> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let top = de
        .deserialize_any(TopVisitor)
        .map_err(|e| ExplainError(format!("invalid JSON: {e}")))?;
    de.end()
        .map_err(|e| ExplainError(format!("invalid JSON: {e}")))?;
    top
}

/// A value the model may keep, as far as its type goes: anything else is `Other`.
enum Loose {
    Str(String),
    /// The number, and whether it was written with a fraction or exponent (serde_json's
    /// `is_f64`): a per-loop figure printed as a whole number was rounded (see
    /// [`PlanNode::rows_rounding`]).
    Num(f64, bool),
    Bool(bool),
    /// An array: its string elements, in order (the others dropped).
    Strings(Vec<String>),
    Other,
}

impl Loose {
    fn str(self) -> Option<String> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
        Ok(Loose::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Loose, E> {
        Ok(Loose::Str(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
        Ok(Loose::Num(v as f64, false))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
        Ok(Loose::Num(v as f64, false))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
        Ok(Loose::Num(v, true))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
        Ok(Loose::Bool(v))
    }
    fn visit_unit<E>(self) -> Result<Loose, E> {
        Ok(Loose::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
        let mut strings = Vec::new();
        while let Some(item) = seq.next_element_seed(LooseSeed)? {
            if let Loose::Str(s) = item {
                strings.push(s);
            }
        }
        Ok(Loose::Strings(strings))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Loose::Other)
    }
}

struct LooseSeed;

impl<'de> DeserializeSeed<'de> for LooseSeed {
    type Value = Loose;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Loose, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

/// A key, borrowed from the text unless it holds an escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The document: an array whose first element is the top object, or that object.
struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Result<Explain, ExplainError>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an EXPLAIN document")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Some(first) = seq.next_element_seed(TopSeed)? else {
            return Ok(Err(ExplainError("an empty array".into())));
        };
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        TopObject.visit_map(map)
    }
    scalars!(|_: &TopVisitor| Err(neither()));
}

fn neither() -> ExplainError {
    ExplainError("neither an array nor an object".into())
}

fn no_plan() -> ExplainError {
    ExplainError("no \"Plan\" key".into())
}

/// The array's first element: the top object, or anything else (which has no `Plan`).
struct TopSeed;

impl<'de> DeserializeSeed<'de> for TopSeed {
    type Value = Result<Explain, ExplainError>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(TopObject)
    }
}

struct TopObject;

impl<'de> Visitor<'de> for TopObject {
    type Value = Result<Explain, ExplainError>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an EXPLAIN document")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut plan = None;
        let (mut planning_ms, mut execution_ms) = (None, None);
        while let Some(key) = map.next_key::<Key>()? {
            match &*key.0 {
                "Plan" => plan = Some(map.next_value_seed(NodeSeed { depth: 0 })?),
                "Planning Time" => planning_ms = number(map.next_value_seed(LooseSeed)?),
                "Execution Time" => execution_ms = number(map.next_value_seed(LooseSeed)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match plan {
            None => Err(no_plan()),
            Some(root) => root.map(|root| Explain {
                root,
                planning_ms,
                execution_ms,
            }),
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(no_plan()))
    }
    scalars!(|_: &TopObject| Err(no_plan()));
}

fn number(v: Loose) -> Option<f64> {
    match v {
        Loose::Num(n, _) => Some(n),
        _ => None,
    }
}

/// A plan node `depth` levels below the root. What is wrong with it is kept as the node's
/// value, not raised, so that a later key of the same name (which the tree would keep in its
/// place) still decides, and the errors come in the tree reader's order.
struct NodeSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Result<PlanNode, ExplainError>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn not_an_object() -> ExplainError {
    ExplainError("a plan node that is not an object".into())
}

/// A node's keys as read, before they are checked.
#[derive(Default)]
struct Fields {
    node_type: Option<Loose>,
    plans: Option<Result<Vec<PlanNode>, ExplainError>>,
    parent_relationship: Option<String>,
    subplan_name: Option<String>,
    relation: Option<String>,
    schema: Option<String>,
    alias: Option<String>,
    index_name: Option<String>,
    scan_direction: Option<String>,
    join_type: Option<String>,
    sort_key: Vec<String>,
    index_cond: Option<String>,
    recheck_cond: Option<String>,
    filter: Option<String>,
    parallel_aware: bool,
    total_cost: Option<f64>,
    plan_rows: Option<f64>,
    /// `Actual Rows`, `Rows Removed by Filter`, `Rows Removed by Index Recheck`: the value and
    /// whether it was written with a fraction.
    counted: [Option<(f64, bool)>; 3],
    actual_loops: Option<f64>,
    disabled: Option<bool>,
    shared_hit_blocks: Option<f64>,
    shared_read_blocks: Option<f64>,
}

impl<'de> Visitor<'de> for NodeSeed {
    type Value = Result<PlanNode, ExplainError>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a plan node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut n = Fields::default();
        let num = |v: Loose| match v {
            Loose::Num(x, float) => Some((x, float)),
            _ => None,
        };
        while let Some(key) = map.next_key::<Key>()? {
            let key = key.0;
            if key == "Plans" {
                n.plans = Some(map.next_value_seed(PlansSeed {
                    depth: self.depth + 1,
                })?);
                continue;
            }
            let slot: &mut Option<String> = match &*key {
                "Parent Relationship" => &mut n.parent_relationship,
                "Subplan Name" => &mut n.subplan_name,
                "Relation Name" => &mut n.relation,
                "Schema" => &mut n.schema,
                "Alias" => &mut n.alias,
                "Index Name" => &mut n.index_name,
                "Scan Direction" => &mut n.scan_direction,
                "Join Type" => &mut n.join_type,
                "Index Cond" => &mut n.index_cond,
                "Recheck Cond" => &mut n.recheck_cond,
                "Filter" => &mut n.filter,
                _ => {
                    let v = match &*key {
                        "Node Type"
                        | "Sort Key"
                        | "Parallel Aware"
                        | "Total Cost"
                        | "Plan Rows"
                        | "Actual Rows"
                        | "Actual Loops"
                        | "Rows Removed by Filter"
                        | "Rows Removed by Index Recheck"
                        | "Disabled"
                        | "Shared Hit Blocks"
                        | "Shared Read Blocks" => map.next_value_seed(LooseSeed)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    match &*key {
                        "Node Type" => n.node_type = Some(v),
                        "Sort Key" => {
                            n.sort_key = match v {
                                Loose::Strings(s) => s,
                                _ => Vec::new(),
                            }
                        }
                        "Parallel Aware" => n.parallel_aware = matches!(v, Loose::Bool(true)),
                        "Disabled" => {
                            n.disabled = match v {
                                Loose::Bool(b) => Some(b),
                                _ => None,
                            }
                        }
                        "Total Cost" => n.total_cost = number(v),
                        "Plan Rows" => n.plan_rows = number(v),
                        "Actual Rows" => n.counted[0] = num(v),
                        "Rows Removed by Filter" => n.counted[1] = num(v),
                        "Rows Removed by Index Recheck" => n.counted[2] = num(v),
                        "Actual Loops" => n.actual_loops = number(v),
                        "Shared Hit Blocks" => n.shared_hit_blocks = number(v),
                        _ => n.shared_read_blocks = number(v),
                    }
                    continue;
                }
            };
            *slot = map.next_value_seed(LooseSeed)?.str();
        }
        Ok(self.node(n))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.not_a_node())
    }
    scalars!(|s: &NodeSeed| s.not_a_node());
}

impl NodeSeed {
    fn too_deep(&self) -> Option<ExplainError> {
        // As the tree reader: plans are never this deep; a document that is was made to
        // crash a reader.
        (self.depth > MAX_PLAN_DEPTH)
            .then(|| ExplainError(format!("plan nested more than {MAX_PLAN_DEPTH} levels")))
    }

    fn not_a_node(&self) -> Result<PlanNode, ExplainError> {
        Err(self.too_deep().unwrap_or_else(not_an_object))
    }

    /// The node, checked in the tree reader's order: depth, `Node Type`, then `Plans`.
    fn node(&self, n: Fields) -> Result<PlanNode, ExplainError> {
        if let Some(e) = self.too_deep() {
            return Err(e);
        }
        let node_type = n
            .node_type
            .and_then(Loose::str)
            .ok_or_else(|| ExplainError("a node without \"Node Type\"".into()))?;
        let children = n.plans.transpose()?.unwrap_or_default();
        let rounding = |c: Option<(f64, bool)>| match c {
            Some((_, true)) => 0.005,
            Some((_, false)) => 0.5,
            None => 0.0,
        };
        Ok(PlanNode {
            node_type,
            parent_relationship: n.parent_relationship,
            subplan_name: n.subplan_name,
            relation: n.relation,
            schema: n.schema,
            alias: n.alias,
            index_name: n.index_name,
            scan_direction: n.scan_direction,
            join_type: n.join_type,
            sort_key: n.sort_key,
            index_cond: n.index_cond,
            recheck_cond: n.recheck_cond,
            filter: n.filter,
            parallel_aware: n.parallel_aware,
            total_cost: n.total_cost.unwrap_or(0.0),
            plan_rows: n.plan_rows.unwrap_or(0.0),
            actual_rows: n.counted[0].map(|(x, _)| x),
            actual_loops: n.actual_loops,
            rows_removed_by_filter: n.counted[1].map(|(x, _)| x),
            rows_removed_by_index_recheck: n.counted[2].map(|(x, _)| x),
            rows_rounding: n.counted.iter().map(|c| rounding(*c)).sum(),
            disabled: n.disabled,
            shared_hit_blocks: n.shared_hit_blocks.unwrap_or(0.0),
            shared_read_blocks: n.shared_read_blocks.unwrap_or(0.0),
            children,
        })
    }
}

/// A node's `Plans`: an array of nodes one level down, or an error (kept, not raised).
struct PlansSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for PlansSeed {
    type Value = Result<Vec<PlanNode>, ExplainError>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn plans_not_an_array() -> ExplainError {
    ExplainError("\"Plans\" is not an array".into())
}

impl<'de> Visitor<'de> for PlansSeed {
    type Value = Result<Vec<PlanNode>, ExplainError>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Plans array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut children = Vec::new();
        let mut first_error = None;
        while let Some(child) = seq.next_element_seed(NodeSeed { depth: self.depth })? {
            match child {
                Ok(c) if first_error.is_none() => children.push(c),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Ok(match first_error {
            Some(e) => Err(e),
            None => Ok(children),
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(plans_not_an_array()))
    }
    scalars!(|_: &PlansSeed| Err(plans_not_an_array()));
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::explain::{Explain, parse_json};

    /// What the streaming reader and the tree reader make of `text`, written out in full.
    fn both(text: &str) -> (String, String) {
        let streamed = format!("{:?}", Explain::parse(text));
        let tree = format!(
            "{:?}",
            parse_json(text).and_then(|v| Explain::from_json(&v))
        );
        (streamed, tree)
    }

    fn documents(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(items) => {
                if items.first().is_some_and(|f| f.get("Plan").is_some()) {
                    out.push(v.clone());
                    return;
                }
                items.iter().for_each(|i| documents(i, out));
            }
            Value::Object(map) => map.values().for_each(|i| documents(i, out)),
            _ => {}
        }
    }

    #[test]
    fn reads_what_the_tree_reads() {
        // Every EXPLAIN document of the test corpus: real plans of PostgreSQL 15 and 18.
        let mut found = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json")
                    && let Ok(v) =
                        serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap())
                {
                    documents(&v, &mut found);
                }
            }
        }
        assert!(found.len() >= 50, "only {} documents found", found.len());
        for doc in &found {
            for text in [
                serde_json::to_string_pretty(doc).unwrap(),
                serde_json::to_string(doc).unwrap(),
            ] {
                let (streamed, tree) = both(&text);
                assert!(streamed.starts_with("Ok("), "{streamed}");
                assert_eq!(streamed, tree);
            }
        }
    }

    #[test]
    fn reads_odd_documents_as_the_tree_does() {
        let node = r#""Node Type": "Seq Scan", "Relation Name": "t""#;
        for text in [
            // Errors, each in the tree reader's words.
            "[]".to_string(),
            "[{}]".into(),
            "[1, {}]".into(),
            "3".into(),
            "\"x\"".into(),
            "null".into(),
            r#"[{"Plan": {}}]"#.into(),
            r#"[{"Plan": 3}]"#.into(),
            r#"[{"Plan": {"Node Type": 3}}]"#.into(),
            r#"[{"Plan": {"Node Type": "Result", "Plans": 3}}]"#.into(),
            r#"[{"Plan": {"Node Type": "Result", "Plans": {"a": 1}}}]"#.into(),
            r#"[{"Plan": {"Node Type": "Result", "Plans": [{"Node Type": "A"}, 3, {}]}}]"#.into(),
            r#"[{"Plan": {"Plans": [3]}}]"#.into(),
            "not json".into(),
            "[{\"Plan\": {}}] trailing".into(),
            // Tolerated: a top object, keys of other types, numbers written either way, keys
            // written twice (the last one counts), escaped keys, other array elements.
            format!(r#"{{"Plan": {{{node}}}, "Planning Time": 0.1, "Execution Time": 2}}"#),
            format!(r#"[{{"Plan": {{{node}, "Filter": 3, "Alias": null, "Schema": ["a"]}}}}]"#),
            format!(
                r#"[{{"Plan": {{{node}, "Actual Rows": 3, "Actual Loops": 2.0,
                "Rows Removed by Filter": 1.5, "Rows Removed by Index Recheck": "x",
                "Total Cost": -1, "Plan Rows": 1e3, "Shared Hit Blocks": 7,
                "Shared Read Blocks": true, "Disabled": 1, "Parallel Aware": "yes"}}}}]"#
            ),
            format!(
                r#"[{{"Plan": {{{node}, "Sort Key": ["a", 1, ["b"], "c"], "Disabled": false,
                "Parallel Aware": true}}}}]"#
            ),
            format!(r#"[{{"Plan": {{{node}, "Sort Key": "a"}}}}]"#),
            format!(
                r#"[{{"Plan": {{"Node Type": "A", {node}, "Plans": 3,
                "Plans": [{{{node}}}], "Actual Rows": 1.0, "Actual Rows": 4}}}}]"#
            ),
            r#"[{"Plan": {"Node\u0020Type": "Index Scan", "Index\u0020Name": "i"}}]"#.to_string(),
            format!(r#"[{{"Plan": {{{node}}}}}, {{"Plan": 3}}, [1, 2]]"#),
            format!(r#"[{{"Plan": 3, "Plan": {{{node}, "Extra": {{"a": [1, {{"b": null}}]}}}}}}]"#),
        ] {
            let (streamed, tree) = both(&text);
            assert_eq!(streamed, tree, "{text}");
        }
    }

    #[test]
    fn a_document_read_from_text_saves_and_compares_as_the_tree() {
        let doc = json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "t",
            "Actual Rows": 2, "Plans": [] }, "Execution Time": 0.5 }]);
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let from_text = crate::measure::Document::from_text(text).unwrap();
        let from_tree = crate::measure::Document::new(doc.clone()).unwrap();
        assert_eq!(serde_json::to_value(&from_text).unwrap(), doc);
        assert!(from_text == from_tree);
        let other = crate::measure::Document::new(
            json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "u" } }]),
        )
        .unwrap();
        assert!(from_text != other);
    }
}
