//! # `shepherd asks`
//!
//! Lists the questions sessions are waiting on (with `--all`, answered ones too): a
//! table for people whose question, options and answer columns shrink to fit the
//! terminal, or with `--json` the protocol's `Ask` objects unchanged. Answer one with
//! `shepherd answer <ID> <text>`.

use std::process::ExitCode;

use shepherd_core::protocol::{Ask, AskState, requests};

use super::table::{Align, Table};
use super::{AsksArgs, Ctx, print, print_json, terminal_width};

/// Run `shepherd asks`.
pub async fn run(ctx: &Ctx, args: &AsksArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let all = args.all;
    let asks = conn
        .call(requests::ListAsks {
            all,
            ..Default::default()
        })
        .await?;
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
        .flexible("SESSION", 10)
        .column("STATE", Align::Left)
        .flexible("QUESTION", 12)
        .flexible("OPTIONS", 7)
        .flexible("ANSWER", 10)
        .flexible("BY", 6);
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
        table.row(vec![
            ask.id.to_string(),
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
        ]);
    }
    table.render(width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    fn ask(id: u64, question: &str) -> Ask {
        Ask {
            id: id.into(),
            session_id: "0193a5c2".into(),
            session_name: "fix-login".into(),
            question: question.into(),
            options: vec!["squash".into(), "merge".into()],
            details: None,
            state: AskState::Open,
            answer: None,
            answered_by: None,
            created_at: 0,
            answered_at: None,
        }
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
        assert!(lines[2].ends_with("squash  cli"), "{out}");
    }
}
