//! One ask in full and answering by option number, against the real core: `shepherd asks
//! <id>` wraps the whole question to COLUMNS (80 when stdout is not a terminal), and
//! `shepherd answer <ask> <n>` answers with option n, `--text` sends the number as it is,
//! an out-of-range number names the valid range, and an ask without options takes the
//! number as its answer.

use std::time::Duration;

use anyhow::Result;
use shepherd_core::protocol::{AskId, DeliveryKind, requests};
use shepherd_harness::{Core, Pi};

const WAIT: Duration = Duration::from_secs(10);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn ask(pi: &mut Pi, question: &str, options: &[&str]) -> Result<AskId> {
    let options = options.iter().map(|o| o.to_string()).collect();
    let question = question.to_string();
    let ask = pi
        .client
        .call(requests::Ask {
            question,
            options,
            details: None,
            ..Default::default()
        })
        .await?;
    Ok(ask.id)
}

const LONG: &str = "Should the migration rewrite every row of the sessions table now, or lazily \
    on read? The table has forty million rows, the deploy window is one hour, and the last \
    rewrite of a table this size took fifty minutes on the staging replica.";

#[tokio::test]
async fn one_ask_in_full_is_wrapped_to_the_terminal() -> Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("sess-asks-one", "migrator").await?;
    let id = ask(&mut pi, LONG, &["now", "lazily"]).await?.to_string();
    let words: Vec<&str> = LONG.split_whitespace().collect();
    for (columns, width) in [(Some("50"), 50), (None, 80)] {
        let mut cmd = core.command();
        cmd.env_remove("COLUMNS");
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        let out = cmd.args(["asks", &id]).output()?;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(
            shown.lines().all(|l| l.chars().count() <= width),
            "{width}:\n{shown}"
        );
        assert!(
            shown.lines().any(|l| l.chars().count() > width - 15),
            "lines use the width {width}:\n{shown}"
        );
        let all: Vec<&str> = shown.split_whitespace().collect();
        assert!(
            all.windows(words.len()).any(|w| w == words.as_slice()),
            "the whole question:\n{shown}"
        );
        assert!(shown.starts_with(&format!("ask {id} · open · migrator (sess-asks-one)\n")));
        assert!(shown.contains("\n  1) now\n  2) lazily\n"), "{shown}");
    }
    let json = core.cli_json(&["asks", &id])?;
    assert_eq!(json["question"], LONG);
    let missing = core.cli(&["asks", "9999"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("there is no ask 9999"));
    Ok(())
}

#[tokio::test]
async fn a_number_answers_with_that_option() -> Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("sess-asks-n", "picker").await?;

    let first = ask(&mut pi, "Squash or keep?", &["squash", "keep"]).await?;
    let n = first.to_string();
    let out = core.cli(&["answer", &n, "3"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "shepherd: ask {n} has options 1-2; 3 is not one of them"
        )),
        "{err}"
    );
    let out = core.cli(&["answer", &n, "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(delivery.kind, DeliveryKind::Answer);
    assert_eq!(
        (delivery.ask_id, delivery.text.as_str()),
        (Some(first), "keep")
    );
    pi.ack(&[delivery.id]).await?;

    let second = ask(&mut pi, "Which port?", &["8080", "9090"]).await?;
    let out = core.cli(&["answer", &second.to_string(), "--text", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (delivery.ask_id, delivery.text.as_str()),
        (Some(second), "2")
    );
    pi.ack(&[delivery.id]).await?;

    let third = ask(&mut pi, "How many retries?", &[]).await?;
    let out = core.cli(&["answer", &third.to_string(), "5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (delivery.ask_id, delivery.text.as_str()),
        (Some(third), "5")
    );
    Ok(())
}
