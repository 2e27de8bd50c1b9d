//! The EXPLAIN JSON walker and the pure verdict stage on arbitrary text: parse, walk, render
//! and judge must never panic, overflow the stack or hang, whatever the document holds.

#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use plancheck::explain::{Explain, render_tree};
use plancheck::verdict::{
    Partition, Probe, RequiredIndex, Rules, conditions_on, judge_generic, judge_plan,
    judge_usability, recognise_cause,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = Explain::parse(text) else {
        return;
    };
    for node in plan.nodes() {
        let _ = node.label();
        let _ = node.rows_visited();
    }
    let _ = plan.scans();
    let _ = plan.shared_buffers();
    let _ = render_tree(&plan);

    let plain = RequiredIndex {
        schema: "public".into(),
        name: "posts_thread_visible_idx".into(),
        table: "posts".into(),
        predicate: Some("(visibility = 'visible'::text)".into()),
        partitions: vec![],
    };
    let partitioned = RequiredIndex {
        schema: "public".into(),
        name: "events_at_idx".into(),
        table: "events".into(),
        predicate: None,
        partitions: vec![
            Partition {
                schema: "public".into(),
                table: "events_2024".into(),
                leaf_index: Some("events_2024_at_idx".into()),
            },
            Partition {
                schema: "public".into(),
                table: "events_2025".into(),
                leaf_index: None,
            },
        ],
    };
    let allow = vec!["forums".to_string(), "public.members".to_string()];
    let mut reltuples = HashMap::new();
    reltuples.insert("public.posts".to_string(), 117_192.0);
    reltuples.insert("public.threads".to_string(), 5_002.0);
    reltuples.insert("public.members".to_string(), -1.0);
    // Functions the catalog knows as STABLE or VOLATILE, named as a cause of not-usable.
    let non_immutable = vec!["current_setting".to_string(), "now".to_string()];
    for index in [&plain, &partitioned] {
        let rules = Rules {
            index,
            allow_seq_scan: &allow,
            reltuples: &reltuples,
        };
        let custom = judge_plan(&plan, &rules);
        let probes = [Probe {
            disabled: "enable_seqscan = off".into(),
            plan: plan.clone(),
        }];
        let usable = judge_usability(custom.clone(), &plan, &probes, &rules, &non_immutable);
        let _ = judge_usability(custom.clone(), &plan, &[], &rules, &non_immutable);
        let _ = judge_generic(custom, usable, &index.name);
        let conditions = conditions_on(&plan, &index.table);
        if let Some(predicate) = &index.predicate {
            let _ = recognise_cause(predicate, &conditions, &non_immutable);
        }
    }
});
