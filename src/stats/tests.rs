use super::*;

fn file() -> File {
    File {
        format: FORMAT.to_string(),
        version: VERSION,
        exported_at: "2026-12-07T08:00:00Z".to_string(),
        server: Server {
            version_num: 150018,
            version: "15.18".to_string(),
            block_size: 8192,
            collate: "C.UTF-8".to_string(),
            ctype: "C.UTF-8".to_string(),
            locale_provider: None,
            locale: None,
        },
        settings: vec![Setting {
            name: "random_page_cost".to_string(),
            setting: "4".to_string(),
            unit: None,
        }],
        redacted: Vec::new(),
        relations: vec![Relation {
            schema: "public".to_string(),
            name: "posts".to_string(),
            kind: "r".to_string(),
            size: Size {
                relpages: 100,
                reltuples: 5000.0,
                relallvisible: 100,
                blocks: 100,
            },
            columns: vec![Column {
                name: "thread_id".to_string(),
                type_name: "bigint".to_string(),
                inherited: false,
                null_frac: 0.0,
                avg_width: 8,
                n_distinct: -0.1,
                most_common_vals: Some("{1,2}".to_string()),
                most_common_freqs: Some(vec![0.1, 0.05]),
                histogram_bounds: Some("{3,40,900}".to_string()),
                correlation: Some(0.9),
                most_common_elems: None,
                most_common_elem_freqs: None,
                elem_count_histogram: None,
                range_length_histogram: None,
                range_empty_frac: None,
                range_bounds_histogram: None,
                redacted: false,
            }],
            indexes: vec![Index {
                name: "posts_thread_idx".to_string(),
                method: "btree".to_string(),
                size: Size {
                    relpages: 20,
                    reltuples: 5000.0,
                    relallvisible: 0,
                    blocks: 20,
                },
                keys: vec![Some("thread_id".to_string())],
                btree: Some(BTree {
                    height: 1,
                    height_from: "metapage".to_string(),
                    lowest: Some("1".to_string()),
                    highest: Some("900".to_string()),
                }),
                gin: None,
                columns: Vec::new(),
            }],
            extended: Vec::new(),
        }],
    }
}

fn text_of(f: &File) -> String {
    serde_json::to_string_pretty(f).unwrap()
}

#[test]
fn a_file_written_reads_back_the_same() {
    let f = file();
    assert_eq!(parse(&text_of(&f)).unwrap(), f);
}

/// Each malformed file is refused with a sentence naming what is wrong. Long: one case per
/// class of malformed file, each two lines.
#[test]
fn every_malformed_file_is_refused_saying_what() {
    let edit = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut v = serde_json::to_value(file()).unwrap();
        change(&mut v);
        parse(&v.to_string()).unwrap_err()
    };
    let said = |e: String, part: &str| assert!(e.contains(part), "{e:?} lacks {part:?}");
    said(
        edit(&|v| v["format"] = "pg_dump".into()),
        "not a plancheck statistics file",
    );
    said(edit(&|v| v["version"] = 2.into()), "version 2");
    said(
        edit(&|v| v["server"]["version_num"] = 120005.into()),
        "PostgreSQL 12",
    );
    said(
        edit(&|v| v["server"]["version_num"] = 190000.into()),
        "PostgreSQL 19",
    );
    said(
        edit(&|v| v["server"]["block_size"] = 8000.into()),
        "block_size",
    );
    said(edit(&|v| v["exported_at"] = "yesterday".into()), "RFC 3339");
    said(
        edit(&|v| v["relations"][0]["size"]["relpages"] = (-1).into()),
        "relpages -1",
    );
    // A partitioned table's relpages is -1 once analysed (PostgreSQL 14 and later), no less.
    let mut partitioned = serde_json::to_value(file()).unwrap();
    partitioned["relations"][0]["kind"] = "p".into();
    partitioned["relations"][0]["size"]["relpages"] = (-1).into();
    partitioned["relations"][0]["size"]["blocks"] = 0.into();
    partitioned["relations"][0]["size"]["relallvisible"] = 0.into();
    let parsed = parse(&partitioned.to_string());
    assert!(parsed.is_ok(), "{parsed:?}");
    said(
        edit(&|v| {
            v["relations"][0]["kind"] = "p".into();
            v["relations"][0]["size"]["relpages"] = (-2).into();
        }),
        "relpages -2",
    );
    said(
        edit(&|v| v["relations"][0]["size"]["blocks"] = (1i64 << 33).into()),
        "blocks",
    );
    said(
        edit(&|v| v["relations"][0]["size"]["reltuples"] = 1e15.into()),
        "reltuples",
    );
    said(
        edit(&|v| v["relations"][0]["kind"] = "v".into()),
        "kind \"v\"",
    );
    said(
        edit(&|v| v["relations"][0]["columns"][0]["null_frac"] = 1.5.into()),
        "null_frac 1.5",
    );
    said(
        edit(&|v| v["relations"][0]["columns"][0]["n_distinct"] = (-2.0).into()),
        "n_distinct -2",
    );
    said(
        edit(&|v| v["relations"][0]["columns"][0]["correlation"] = 3.into()),
        "correlation 3",
    );
    said(
        edit(&|v| v["relations"][0]["columns"][0]["most_common_freqs"] = serde_json::json!([2])),
        "most_common_freqs 2",
    );
    said(
        edit(&|v| {
            v["relations"][0]["columns"][0]["most_common_vals"] = "1); DROP TABLE x; --".into()
        }),
        "not an array literal",
    );
    said(
        edit(&|v| v["relations"][0]["columns"][0]["redacted"] = true.into()),
        "redacted but holds values",
    );
    said(
        edit(&|v| {
            let c = v["relations"][0]["columns"][0].clone();
            v["relations"][0]["columns"].as_array_mut().unwrap().push(c);
        }),
        "column thread_id is given twice",
    );
    said(
        edit(&|v| {
            let r = v["relations"][0].clone();
            v["relations"].as_array_mut().unwrap().push(r);
        }),
        "relation public.posts is given twice",
    );
    said(
        edit(&|v| v["relations"][0]["indexes"][0]["btree"]["height"] = 99.into()),
        "99 levels",
    );
    said(
        edit(&|v| v["settings"][0]["name"] = "random_page_cost; SET x".into()),
        "not a setting's name",
    );
    said(
        edit(&|v| {
            v["relations"][0]["indexes"][0]["gin"] = serde_json::json!({
                "pending_pages": 0, "total_pages": 10, "entry_pages": 1, "data_pages": 8,
                "entries": 3
            });
        }),
        "GIN metapage statistics out of range",
    );
    said(
        edit(&|v| v["relations"][0]["surprise"] = 1.into()),
        "unknown field `surprise`",
    );
    said(
        edit(&|v| {
            v["relations"][0]["extended"] = serde_json::json!([{
                "schema": "public", "name": "s", "keys": ["a", "b"], "kinds": ["d"],
                "n_distinct": [{"keys": [0, 5], "value": 3.0}]
            }]);
        }),
        "are not its keys",
    );
    // A key twice, or a dependency implying one of its own keys: not PostgreSQL's.
    said(
        edit(&|v| {
            v["relations"][0]["extended"] = serde_json::json!([{
                "schema": "public", "name": "s", "keys": ["a", "b"], "kinds": ["d"],
                "n_distinct": [{"keys": [0, 0], "value": 3.0}]
            }]);
        }),
        "n_distinct keys [0, 0] are not its keys",
    );
    said(
        edit(&|v| {
            v["relations"][0]["extended"] = serde_json::json!([{
                "schema": "public", "name": "s", "keys": ["a", "b"], "kinds": ["f"],
                "dependencies": [{"from": [1], "to": 1, "degree": 1.0}]
            }]);
        }),
        "dependency [1] => 1 is not on its keys",
    );
}

#[test]
fn a_file_that_is_not_json_is_located_by_line_and_column() {
    let e = parse("{\n  \"format\": \"plancheck-statistics\",\n  oops\n}").unwrap_err();
    assert!(e.starts_with("3:3: "), "{e}");
}

#[test]
fn redact_patterns_name_a_column_or_a_whole_table() {
    let p = Redact::parse("users.email").unwrap();
    assert!(p.matches("public", "users", "email"));
    assert!(p.matches("app", "users", "email"));
    assert!(!p.matches("public", "users", "name"));
    let p = Redact::parse("app.users.*").unwrap();
    assert!(p.matches("app", "users", "name"));
    assert!(!p.matches("public", "users", "name"));
    for bad in ["users", "a.b.c.d", "users.", ".email"] {
        assert!(Redact::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_column_redacted_holds_no_value_and_keeps_its_numbers() {
    let mut c = file().relations[0].columns[0].clone();
    c.redact();
    assert!(!c.holds_values());
    assert!(c.redacted);
    assert_eq!(c.n_distinct, -0.1);
    assert_eq!(c.correlation, Some(0.9));
    assert!(c.most_common_freqs.is_none());
}

#[test]
fn a_file_past_a_week_is_said_to_be_stale() {
    let f = file();
    let at = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    assert_eq!(
        f.age(at("2026-12-08T08:00:00Z")).unwrap(),
        chrono::Duration::days(1)
    );
    assert!(crate::report::stats::stale(&f, at("2026-12-13T08:00:00Z")).is_none());
    let said = crate::report::stats::stale(&f, at("2026-12-14T08:00:00Z")).unwrap();
    assert!(said.contains("exported 7 days ago"), "{said}");
}

#[test]
fn a_database_sorts_as_the_copy_only_in_code_point_order() {
    let mut server = file().server;
    assert!(server.sorts_as_c());
    for (provider, collate, locale, c) in [
        (None, "C", None, true),
        (None, "POSIX", None, true),
        (Some("c"), "en_US.UTF-8", None, false),
        (Some("i"), "C", Some("und"), false),
        (Some("b"), "C", Some("C.UTF-8"), true),
    ] {
        server.locale_provider = provider.map(str::to_string);
        server.collate = collate.to_string();
        server.locale = locale.map(str::to_string);
        assert_eq!(server.sorts_as_c(), c, "{provider:?} {collate} {locale:?}");
    }
    assert_eq!(server.collation(), "builtin C.UTF-8");
}
