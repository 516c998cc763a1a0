//! `shepherd usage` over a REAL Pi session file (the pinned Pi on Node 22 with the shepherd
//! extension, against the scripted fake model with prices and cache tokens): after two
//! turns the core's totals equal the sum computed here from the file, and equal Pi's own
//! `get_session_stats` asked after the second turn. `get_session_stats` reports the whole
//! session at the moment it is asked: after the first turn it is the first turn's record
//! alone, which is why a two-turn file sums to about twice it. Cutting the real file
//! inside its last entry makes the report incomplete, with the reason.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(60);

/// Pi's own totals (`get_session_stats`), as the fields shepherd reports.
async fn pi_stats(pi: &mut PiSession) -> Result<Value> {
    let stats = pi.command(json!({"type": "get_session_stats"})).await?;
    let d = &stats["data"];
    Ok(json!({
        "input": d["tokens"]["input"], "output": d["tokens"]["output"],
        "cache_read": d["tokens"]["cacheRead"], "cache_write": d["tokens"]["cacheWrite"],
        "total_tokens": d["tokens"]["total"], "cost": d["cost"],
    }))
}

/// Every usage record Pi counts, read from the file as plain JSON: (model, usage).
fn records(file: &Path) -> Result<Vec<(Option<String>, Value)>> {
    let text = std::fs::read_to_string(file)?;
    let mut out = Vec::new();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line)?;
        let m = &e["message"];
        let found = match e["type"].as_str() {
            Some("message") if m["role"] == "assistant" => Some((
                Some(format!(
                    "{}/{}",
                    m["provider"].as_str().unwrap(),
                    m["model"].as_str().unwrap()
                )),
                m["usage"].clone(),
            )),
            Some("message") if m["role"] == "toolResult" && !m["usage"].is_null() => {
                Some((None, m["usage"].clone()))
            }
            Some("usage") => Some((
                Some(format!(
                    "{}/{}",
                    e["provider"].as_str().unwrap(),
                    e["model"].as_str().unwrap()
                )),
                e["usage"].clone(),
            )),
            Some("compaction" | "branch_summary") if !e["usage"].is_null() => {
                Some((None, e["usage"].clone()))
            }
            _ => None,
        };
        out.extend(found);
    }
    Ok(out)
}

/// Sum usage records the way Pi does (file order), as shepherd's field names.
fn sum(records: &[(Option<String>, Value)]) -> Value {
    let (mut input, mut output, mut read, mut write, mut total) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut cost = 0f64;
    for (_, u) in records {
        input += u["input"].as_u64().unwrap();
        output += u["output"].as_u64().unwrap();
        read += u["cacheRead"].as_u64().unwrap();
        write += u["cacheWrite"].as_u64().unwrap();
        total += u["totalTokens"].as_u64().unwrap();
        cost += u["cost"]["total"].as_f64().unwrap();
    }
    json!({"input": input, "output": output, "cache_read": read, "cache_write": write,
           "total_tokens": total, "cost": cost})
}

/// Pi's own stats against a sum of the file's records: the token counts exactly; the cost
/// to the last bits of a double, because Pi adds the costs in another order (measured:
/// 0.004851 from Pi, 0.004850999999999999 summed record by record).
fn assert_same_as_pis(pis: &Value, summed: &Value, what: &str) {
    for field in [
        "input",
        "output",
        "cache_read",
        "cache_write",
        "total_tokens",
    ] {
        assert_eq!(
            pis[field], summed[field],
            "{what}: {field}: {pis} vs {summed}"
        );
    }
    let (a, b) = (
        pis["cost"].as_f64().unwrap(),
        summed["cost"].as_f64().unwrap(),
    );
    assert!(
        (a - b).abs() <= 1e-12 * a.abs().max(1.0),
        "{what}: cost {a} vs {b}"
    );
}

/// The token and cost fields of a report's totals or row (without `records`, `model`).
fn totals(v: &Value) -> Value {
    let mut v = v.clone();
    let o = v.as_object_mut().unwrap();
    o.remove("records");
    o.remove("model");
    v
}

#[tokio::test]
async fn usage_of_a_real_pi_session_equals_the_file_and_pis_own_stats() -> Result<()> {
    let core = Core::start().await?;
    let model = FakeModel::start(|_| Reply::text("Done."))
        .await?
        .with_cost(3.0, 15.0, 0.3, 3.75);
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("usage-e2e".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    let session = core.connected_session("usage-e2e", LONG).await?;
    let id = session["id"].as_str().context("session id")?.to_string();

    pi.prompt("First turn.").await?;
    pi.wait_settled(LONG).await?;
    let after_one = pi_stats(&mut pi).await?;
    // The second turn also reads and writes a cache.
    model.set_cache_tokens(100, 20);
    pi.prompt("Second turn.").await?;
    pi.wait_settled(LONG).await?;
    let after_two = pi_stats(&mut pi).await?;
    let file = pi.session_file().await?;

    eprintln!("get_session_stats after one turn: {after_one}\nafter two turns: {after_two}");
    let recs = records(&file)?;
    assert_eq!(recs.len(), 2, "one assistant message per turn: {recs:?}");
    let by_hand = sum(&recs);
    assert!(by_hand["cost"].as_f64().unwrap() > 0.0, "{by_hand}");
    assert_eq!(by_hand["cache_read"], 100, "{by_hand}");
    assert_eq!(by_hand["cache_write"], 20, "{by_hand}");
    // Pi's stats are of the whole session when asked: after one turn the first record,
    // after two both, which is what the file holds.
    assert_same_as_pis(
        &after_one,
        &sum(&recs[..1]),
        "get_session_stats after one turn",
    );
    assert_same_as_pis(&after_two, &by_hand, "get_session_stats after two turns");

    // The core knows the file once the extension said where it is.
    eventually(LONG, "the session file to be known", || {
        let s = core.session_named("usage-e2e")?;
        (s["session_file"].as_str()? == file.to_str()?).then_some(())
    })
    .await?;
    let report = core.cli_json(&["usage", "usage-e2e"])?;
    assert_eq!(report["complete"], true, "{report:#}");
    assert_eq!(report["missing"], json!([]));
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{report:#}");
    assert_eq!(sessions[0]["session_id"], id.as_str());
    assert_eq!(sessions[0]["file"], file.to_str().unwrap());
    assert_eq!(totals(&report["total"]), by_hand, "{report:#}");
    assert_same_as_pis(&after_two, &totals(&report["total"]), "shepherd's total");
    assert_eq!(report["total"]["records"], 2);
    assert_eq!(report["models"].as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(report["models"][0]["model"], "fake/fake-model");
    assert_eq!(totals(&report["models"][0]), by_hand);
    // Without a session the CLI counts every session with a file: this one.
    let all = core.cli_json(&["usage"])?;
    assert_eq!(all["total"], report["total"], "{all:#}");

    // The human form says the same.
    let out = core.cli(&["usage", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let cost = format!("${:.6}", by_hand["cost"].as_f64().unwrap());
    assert!(
        text.contains(&format!(
            "\ntotal: {cost} · {} tokens",
            by_hand["total_tokens"]
        )),
        "{text}"
    );
    assert!(!text.contains("coverage incomplete"), "{text}");

    // A file cut inside its last entry is not counted, and the report says why.
    pi.shutdown().await?;
    let bytes = std::fs::read(&file)?;
    std::fs::write(&file, &bytes[..bytes.len() - 30])?;
    let cut = core.cli_json(&["usage", &id])?;
    assert_eq!(cut["complete"], false, "{cut:#}");
    assert_eq!(cut["total"]["records"], 0, "{cut:#}");
    let reason = cut["missing"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("cut short"), "{reason}");
    assert_eq!(cut["sessions"][0]["error"], reason);
    let out = core.cli(&["usage", &id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("coverage incomplete: 1 session not counted"),
        "{text}"
    );
    assert!(text.contains("not counted"), "{text}");
    Ok(())
}
