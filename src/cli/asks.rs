//! # `shepherd asks`
//!
//! Lists the questions sessions are waiting on (with `--all`, answered ones too): a
//! table for people whose question, options and answer columns shrink to fit the
//! terminal, or with `--json` the protocol's `Ask` objects unchanged. `shepherd asks <ID>`
//! shows one ask in full, its question wrapped to the terminal. Answer one with
//! `shepherd answer <ID> <text>`. A linked host's open asks are listed too, their ID
//! written `HOST:NUMBER` (`gpu:17`), as `shepherd answer` takes it. [`fetch`] is the one request to the core, also used by
//! `shepherd answer` to map an option number to its text.

use std::process::ExitCode;

use shepherd_core::protocol::{Ask, AskId, AskState, requests};

use super::format::{ago, now_ms, utc, wrap};
use super::table::{Align, Table};
use super::{
    AskRef, AsksArgs, Connection, Ctx, Failure, print, print_json, terminal_width, text_width,
};

/// The asks the core knows: open ones, or with `all` answered ones too.
pub async fn fetch(conn: &mut Connection, all: bool) -> Result<Vec<Ask>, Failure> {
    conn.call(requests::ListAsks {
        all,
        ..Default::default()
    })
    .await
}

/// One ask by its number, open or answered.
pub async fn fetch_one(conn: &mut Connection, ask: AskId) -> Result<Ask, Failure> {
    fetch(conn, true)
        .await?
        .into_iter()
        .find(|a| a.id == ask)
        .ok_or_else(|| {
            Failure::new(
                "unknown_ask",
                format!(
                    "there is no ask {ask}: `shepherd asks` lists the open ones (`--all` the \
                     answered ones too)"
                ),
            )
        })
}

/// Run `shepherd asks`.
pub async fn run(ctx: &Ctx, args: &AsksArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    if let Some(id) = args.ask {
        let ask = fetch_one(&mut conn, id.into()).await?;
        if ctx.json {
            print_json(&ask)?;
        } else {
            print(&render_one(&ask, text_width(), now_ms()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let all = args.all;
    let mut asks = fetch(&mut conn, all).await?;
    if let Some(host) = &args.host {
        asks.retain(|a| super::on_host(a.host.as_deref(), host));
    }
    if ctx.json {
        print_json(&asks)?;
    } else if asks.is_empty() {
        let text = if all {
            "no asks yet\n"
        } else {
            "no open asks (--all also lists answered ones)\n"
        };
        print(text)?;
    } else {
        print(&render(&asks, terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The human table.
pub fn render(asks: &[Ask], width: usize) -> String {
    let mut table = Table::new()
        .column("ID", Align::Right)
        .middle("SESSION", 10)
        .column("STATE", Align::Left)
        .flexible("QUESTION", 12)
        .flexible("OPTIONS", 7)
        .flexible("ANSWER", 10)
        .flexible("BY", 6)
        .column("FOR", Align::Left);
    for ask in asks {
        let options = if ask.options.is_empty() {
            "-".to_string()
        } else {
            ask.options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}) {o}", i + 1))
                .collect::<Vec<_>>()
                .join("  ")
        };
        // A linked host's ask is named as `shepherd answer` takes it: `gpu:17`.
        let id = AskRef {
            host: ask.host.clone(),
            id: ask.id,
        };
        table.row(vec![
            id.to_string(),
            ask.session_name.clone(),
            match ask.state {
                AskState::Open => "open",
                AskState::Answered => "answered",
            }
            .to_string(),
            ask.question.clone(),
            options,
            ask.answer.clone().unwrap_or_else(|| "-".into()),
            ask.answered_by.clone().unwrap_or_else(|| "-".into()),
            addressee(ask),
        ]);
    }
    table.render(width)
}

/// Whom an ask is for: `you`, or the role it was addressed to (`manager of app`,
/// `chief`), which you may answer in its place.
fn addressee(ask: &Ask) -> String {
    match &ask.to {
        None => "you".to_string(),
        Some(to) => match (to.role, to.project.as_deref()) {
            (shepherd_core::protocol::Role::Manager, Some(p)) => format!("manager of {p}"),
            (role, _) => role.as_str().to_string(),
        },
    }
}

/// One ask in full: who asks and since when, the question wrapped to `width`, its
/// numbered options, details, and the answer or how to give one.
pub fn render_one(ask: &Ask, width: usize, now: u64) -> String {
    let mut out = Vec::new();
    let state = match ask.state {
        AskState::Open => "open",
        AskState::Answered => "answered",
    };
    out.push(format!(
        "ask {} · {state} · {} ({})",
        ask.id, ask.session_name, ask.session_id
    ));
    out.push(format!(
        "asked {} ({})",
        utc(ask.created_at),
        ago(ask.created_at, now)
    ));
    if let Some(to) = &ask.to {
        let holder = to
            .session_name
            .as_deref()
            .map_or(String::new(), |n| format!(" ({n})"));
        out.push(format!(
            "for the {}{holder}; you may answer it too",
            addressee(ask)
        ));
    }
    out.push(String::new());
    out.extend(wrap(&ask.question, width, ""));
    if !ask.options.is_empty() {
        out.push(String::new());
        out.push("options:".into());
        for (i, option) in ask.options.iter().enumerate() {
            let label = format!("  {}) ", i + 1);
            let mut lines = wrap(option, width, &" ".repeat(label.len())).into_iter();
            if let Some(first) = lines.next() {
                out.push(format!("{label}{}", first.trim_start()));
            }
            out.extend(lines);
        }
    }
    if let Some(details) = ask.details.as_deref().filter(|d| !d.trim().is_empty()) {
        out.push(String::new());
        out.push("details:".into());
        out.extend(wrap(details, width, "  "));
    }
    out.push(String::new());
    match &ask.answer {
        Some(answer) => {
            let by = ask.answered_by.as_deref().unwrap_or("someone");
            let when = ask
                .answered_at
                .map(|at| format!(" at {} ({})", utc(at), ago(at, now)))
                .unwrap_or_default();
            out.push(format!("answered by {by}{when}:"));
            out.extend(wrap(answer, width, "  "));
        }
        None => {
            let how = if ask.options.is_empty() {
                format!("answer: shepherd answer {} <text>", ask.id)
            } else {
                format!(
                    "answer: shepherd answer {} <1-{}> (an option) or <text>",
                    ask.id,
                    ask.options.len()
                )
            };
            out.extend(wrap(&how, width, ""));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use unicode_width::UnicodeWidthStr;

    fn ask(id: u64, question: &str) -> Ask {
        Ask {
            id: id.into(),
            session_id: "0193a5c2".into(),
            question: question.into(),
            options: vec!["squash".into(), "merge".into()],
            ..examples::ask()
        }
    }

    #[test]
    fn an_ask_for_a_role_says_whom_it_is_for() {
        let mut a = ask(3, "Merge?");
        a.to = Some(shepherd_core::protocol::AskTo {
            role: shepherd_core::protocol::Role::Manager,
            repo_id: Some("/src/app/.git".into()),
            project: Some("app".into()),
            session_id: Some("m".into()),
            session_name: Some("mara".into()),
            worker: None,
        });
        let out = render(&[a.clone(), ask(4, "Tag?")], 200);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].ends_with("BY  FOR"), "{out}");
        assert!(lines[1].ends_with("manager of app"), "{out}");
        assert!(lines[2].ends_with("you"), "{out}");
        let one = render_one(&a, 80, 0);
        assert!(
            one.contains("\nfor the manager of app (mara); you may answer it too\n"),
            "{one}"
        );
    }

    #[test]
    fn long_questions_are_cut_to_the_terminal() {
        let mut answered = ask(12, "Short?");
        answered.state = AskState::Answered;
        answered.answer = Some("squash".into());
        answered.answered_by = Some("cli".into());
        let long =
            "Should the migration rewrite every row of the sessions table now, or lazily on read?";
        let out = render(&[ask(3, long), answered], 80);
        for line in out.lines() {
            assert!(line.width() <= 80, "{line:?}");
        }
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("ID  SESSION    STATE     QUESTION"),
            "{out}"
        );
        assert!(
            lines[1].starts_with(" 3  fix-login  open      Should the"),
            "{out}"
        );
        assert!(lines[1].contains('…'), "{out}");
        assert!(lines[2].ends_with("squash  cli  you"), "{out}");
    }

    #[test]
    fn one_ask_shows_the_whole_question_wrapped() {
        let long = "Should the migration rewrite every row of the sessions table now, or lazily \
                    on read? The table has 40 million rows and the deploy window is one hour.";
        let mut one = ask(3, long);
        one.created_at = 1_796_130_379_000;
        one.details = Some("see docs/migrations.md".into());
        let out = render_one(&one, 40, 1_796_130_379_000 + 120_000);
        for line in out.lines() {
            assert!(line.width() <= 40, "{line:?}");
        }
        assert!(!out.contains('…'), "nothing is cut: {out}");
        let words: Vec<&str> = long.split_whitespace().collect();
        let shown: Vec<&str> = out.split_whitespace().collect();
        assert!(
            shown.windows(words.len()).any(|w| w == words.as_slice()),
            "every word of the question, in order: {out}"
        );
        assert!(
            out.starts_with(
                "ask 3 · open · fix-login (0193a5c2)\nasked 2026-12-01 13:06:19 UTC (2m ago)\n\nShould"
            ),
            "{out}"
        );
        assert!(
            out.contains("\noptions:\n  1) squash\n  2) merge\n"),
            "{out}"
        );
        assert!(
            out.contains("\ndetails:\n  see docs/migrations.md\n"),
            "{out}"
        );
        assert!(
            out.ends_with("answer: shepherd answer 3 <1-2> (an\noption) or <text>\n"),
            "{out}"
        );
    }
}
