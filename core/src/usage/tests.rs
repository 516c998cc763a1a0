//! Unit tests of the usage reader and report: the recorded real Pi session file, every
//! record kind Pi counts, and files that cannot be counted.

use std::io::Cursor;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::file::{self, FileUsage};
use super::{Scoped, build};
use crate::protocol::{SessionId, UsageTotals};

fn recorded(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/sessions")
        .join(name)
}

fn usage(input: u64, output: u64, read: u64, write: u64, cost: f64) -> Value {
    json!({"input": input, "output": output, "cacheRead": read, "cacheWrite": write,
           "reasoning": 0, "totalTokens": input + output + read + write,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}})
}

fn header(id: &str) -> Value {
    json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-12-03T14:00:00.000Z", "cwd": "/w"})
}

fn assistant(provider: &str, model: &str, u: Value) -> Value {
    json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "t",
           "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                       "provider": provider, "model": model, "usage": u,
                       "stopReason": "stop", "timestamp": 1}})
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn parse(text: &str) -> Result<FileUsage, String> {
    file::parse(Cursor::new(text.as_bytes()))
}

/// The independent sum: every record Pi's getSessionStats adds, read as plain JSON.
fn sum_by_hand(text: &str) -> UsageTotals {
    let mut t = UsageTotals::default();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let u = match e["type"].as_str().unwrap() {
            "message" => match e["message"]["role"].as_str().unwrap() {
                "assistant" | "toolResult" => &e["message"]["usage"],
                _ => &Value::Null,
            },
            "usage" | "compaction" | "branch_summary" => &e["usage"],
            _ => &Value::Null,
        };
        if u.is_null() {
            continue;
        }
        t.input += u["input"].as_u64().unwrap();
        t.output += u["output"].as_u64().unwrap();
        t.cache_read += u["cacheRead"].as_u64().unwrap();
        t.cache_write += u["cacheWrite"].as_u64().unwrap();
        t.total_tokens += u["totalTokens"].as_u64().unwrap();
        t.cost += u["cost"]["total"].as_f64().unwrap();
        t.records += 1;
    }
    t
}

#[test]
fn a_recorded_real_session_sums_its_assistant_and_compaction_records() {
    let path = recorded("worker.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let got = file::read(&path, None).unwrap();
    let expected = sum_by_hand(&text);
    assert_eq!(got.total, expected);
    // Seven assistant messages and one compaction in the recording.
    assert_eq!(got.total.records, 8);
    assert_eq!(
        (got.total.input, got.total.output),
        (5674, 90),
        "{:?}",
        got.total
    );
    let named: Vec<_> = got.models.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(named, vec![Some("fake/fake-model".to_string()), None]);
    let compaction = &got.models[1].1;
    assert_eq!(
        (compaction.input, compaction.output, compaction.records),
        (668, 20, 1)
    );
}

#[test]
fn every_kind_of_record_pi_counts_is_counted_per_model() {
    let text = jsonl(&[
        header("s1"),
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "t",
               "message": {"role": "user", "content": "Hello", "timestamp": 1}}),
        assistant(
            "anthropic",
            "claude-sonnet-4-5",
            usage(100, 10, 1000, 50, 0.25),
        ),
        json!({"type": "message", "id": "r1", "parentId": "a1", "timestamp": "t",
               "message": {"role": "toolResult", "toolCallId": "c", "toolName": "x",
                           "content": [], "isError": false, "timestamp": 1,
                           "usage": usage(7, 3, 0, 0, 0.01)}}),
        json!({"type": "message", "id": "r2", "parentId": "r1", "timestamp": "t",
               "message": {"role": "toolResult", "toolCallId": "d", "toolName": "y",
                           "content": [], "isError": false, "timestamp": 1}}),
        json!({"type": "usage", "id": "w1", "parentId": "r2", "timestamp": "t", "kind": "cache_warm",
               "provider": "anthropic", "model": "claude-sonnet-4-5",
               "usage": usage(0, 0, 50000, 0, 0.015)}),
        json!({"type": "usage", "id": "w2", "parentId": "w1", "timestamp": "t", "kind": "something_new",
               "provider": "openai", "model": "gpt-4o", "usage": usage(5, 5, 0, 0, 0.5)}),
        json!({"type": "compaction", "id": "c1", "parentId": "w2", "timestamp": "t", "summary": "s",
               "firstKeptEntryId": "a1", "tokensBefore": 5, "usage": usage(20, 2, 0, 0, 0.02)}),
        json!({"type": "compaction", "id": "c2", "parentId": "c1", "timestamp": "t", "summary": "s",
               "firstKeptEntryId": "c2", "tokensBefore": 5}),
        json!({"type": "branch_summary", "id": "b1", "parentId": "a1", "timestamp": "t",
               "fromId": "c2", "summary": "s", "usage": usage(30, 3, 0, 0, 0.03)}),
        json!({"type": "custom", "id": "x1", "parentId": "b1", "timestamp": "t",
               "customType": "other-ext", "usage": {"whatever": true}}),
        assistant("anthropic", "claude-sonnet-4-5", usage(1, 1, 0, 0, 0.125)),
    ]);
    let got = parse(&text).unwrap();
    assert_eq!(got.session_id, "s1");
    assert_eq!(got.total, sum_by_hand(&text));
    assert_eq!(got.total.records, 7);
    let rows: Vec<(Option<&str>, u64, f64)> = got
        .models
        .iter()
        .map(|(m, t)| (m.as_deref(), t.records, t.cost))
        .collect();
    assert_eq!(
        rows,
        vec![
            (Some("anthropic/claude-sonnet-4-5"), 3, 0.25 + 0.015 + 0.125),
            (None, 3, 0.01 + 0.02 + 0.03),
            (Some("openai/gpt-4o"), 1, 0.5),
        ]
    );
}

#[test]
fn files_that_cannot_be_counted_say_why() {
    let good = jsonl(&[header("s1"), assistant("p", "m", usage(1, 1, 0, 0, 0.1))]);
    // Cut inside the last entry.
    let cut = &good[..good.len() - 20];
    let err = parse(cut).unwrap_err();
    assert!(err.contains("line 2") && err.contains("cut short"), "{err}");
    // Garbage in the middle.
    let garbage = format!("{}not json\n{}", jsonl(&[header("s1")]), &good);
    let err = parse(&garbage).unwrap_err();
    assert!(err.starts_with("line 2 is not a session entry"), "{err}");
    // No header.
    let err = parse(&jsonl(&[assistant("p", "m", usage(1, 1, 0, 0, 0.1))])).unwrap_err();
    assert!(err.contains("not the `session` header"), "{err}");
    assert!(parse("").unwrap_err().contains("empty"));
    // A usage record missing a field Pi sums.
    let mut bad = usage(1, 1, 0, 0, 0.1);
    bad.as_object_mut().unwrap().remove("cacheWrite");
    let err = parse(&jsonl(&[header("s1"), assistant("p", "m", bad)])).unwrap_err();
    assert!(
        err.contains("line 2") && err.contains("cacheWrite"),
        "{err}"
    );
    // An assistant message without usage.
    let mut no_usage = assistant("p", "m", Value::Null);
    no_usage["message"].as_object_mut().unwrap().remove("usage");
    let err = parse(&jsonl(&[header("s1"), no_usage])).unwrap_err();
    assert!(err.contains("without `usage`"), "{err}");
    // A last entry without its newline still counts when it is whole.
    let whole = good.trim_end();
    assert_eq!(parse(whole).unwrap().total.records, 1);
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn a_report_counts_each_session_once_and_flags_what_it_could_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.jsonl",
        &jsonl(&[
            header("aaa"),
            assistant("p", "cheap", usage(10, 1, 0, 0, 0.001)),
            assistant("p", "dear", usage(10, 1, 0, 0, 1.0)),
        ]),
    );
    let b = write(
        dir.path(),
        "b.jsonl",
        &jsonl(&[
            header("bbb"),
            assistant("p", "cheap", usage(5, 5, 0, 0, 0.002)),
        ]),
    );
    let broken = write(
        dir.path(),
        "c.jsonl",
        "{\"type\":\"session\",\"id\":\"ccc\"}\n{oops\n",
    );
    let scoped = |id: &str, file: Option<&str>| Scoped {
        id: SessionId::from(id),
        name: Some(format!("name-{id}")),
        file: file.map(str::to_string),
    };
    let scope = vec![
        scoped("aaa", Some(&a)),
        scoped("bbb", Some(&b)),
        scoped("aaa", Some(&a)),
        scoped("ccc", Some(&broken)),
        scoped("ddd", None),
        scoped("eee", Some(&a)), // a file that belongs to another session
        Scoped {
            id: SessionId::from("fff"),
            name: None,
            file: None,
        },
        scoped(
            "ggg",
            Some(&dir.path().join("gone.jsonl").to_string_lossy()),
        ),
    ];
    let report = build(&scope);
    let ids: Vec<&str> = report
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, ["aaa", "bbb", "ccc", "ddd", "eee", "fff", "ggg"]);
    assert!(!report.complete);
    let missing: Vec<&str> = report
        .missing
        .iter()
        .map(|m| m.session_id.as_str())
        .collect();
    assert_eq!(missing, ["ccc", "ddd", "eee", "fff", "ggg"]);
    let reason = |id: &str| {
        report
            .missing
            .iter()
            .find(|m| m.session_id.as_str() == id)
            .unwrap()
            .reason
            .clone()
    };
    assert!(reason("ccc").contains("line 2"), "{}", reason("ccc"));
    assert!(
        reason("ddd").contains("no session file"),
        "{}",
        reason("ddd")
    );
    assert!(
        reason("eee").contains("names session aaa"),
        "{}",
        reason("eee")
    );
    assert!(reason("fff").contains("does not know"), "{}", reason("fff"));
    assert!(
        reason("ggg").contains("does not exist"),
        "{}",
        reason("ggg")
    );
    // Nothing of an uncounted session is in the totals.
    assert_eq!(report.sessions[2].usage, UsageTotals::default());
    assert_eq!(
        report.sessions[2].error.as_deref(),
        Some(reason("ccc").as_str())
    );
    assert_eq!(report.total.records, 3);
    assert_eq!(report.total.input, 25);
    assert_eq!(report.total.cost, 0.001 + 1.0 + 0.002);
    let rows: Vec<(Option<&str>, u64, f64)> = report
        .models
        .iter()
        .map(|m| (m.model.as_deref(), m.usage.records, m.usage.cost))
        .collect();
    assert_eq!(
        rows,
        vec![
            (Some("p/dear"), 1, 1.0),
            (Some("p/cheap"), 2, 0.001 + 0.002)
        ]
    );
}

#[test]
fn an_empty_scope_is_a_complete_empty_report() {
    let report = build(&[]);
    assert!(report.complete);
    assert!(report.sessions.is_empty() && report.models.is_empty());
    assert_eq!(report.total, UsageTotals::default());
}

#[test]
fn files_that_are_not_regular_or_too_large_are_not_counted_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    crate::files::make_fifo(&fifo);
    // Nobody writes to the FIFO: a blocking open would hang here; /dev/zero never ends.
    for (path, what) in [
        (fifo.as_path(), "a FIFO"),
        (std::path::Path::new("/dev/zero"), "a character device"),
        (dir.path(), "a directory"),
    ] {
        let err = file::read(path, None).unwrap_err();
        assert!(
            err.contains(what) && err.contains("not a regular file"),
            "{err}"
        );
    }
    let big = jsonl(&[header("s1"), assistant("p", "m", usage(1, 1, 0, 0, 0.1))]);
    let path = write(dir.path(), "big.jsonl", &big);
    let small = big.len() as u64 - 1;
    let err = file::read_bounded(
        std::path::Path::new(&path),
        None,
        small,
        std::time::Duration::from_secs(60),
    )
    .unwrap_err();
    assert!(err.contains("too large"), "{err}");
    let err = file::read_bounded(
        std::path::Path::new(&path),
        None,
        big.len() as u64,
        std::time::Duration::ZERO,
    )
    .unwrap_err();
    assert!(err.contains("took longer than"), "{err}");
}
