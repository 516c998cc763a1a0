//! # `shepherd agents`
//!
//! The agent definitions a managed worker can be started from, as the core sees them for
//! a directory (this one, or `--cwd`): `<dir>/.pi/agents/*.md` over `<agent dir>/agents/*.md`
//! over the bundled `scout`, `implementer` and `reviewer`. One row per name with where it
//! came from, its model, its tools and its description; then every file that cannot be
//! used, with its error (never left out). With `--json`, the protocol's `AgentDef`
//! objects unchanged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use shepherd_core::protocol::{AgentDef, requests};

use super::table::{Align, Table};
use super::{AgentsArgs, Ctx, Failure, print, print_json, terminal_width};

/// Run `shepherd agents`.
pub async fn run(ctx: &Ctx, args: &AgentsArgs) -> anyhow::Result<ExitCode> {
    let cwd = directory(args.cwd.as_deref())?;
    let mut conn = ctx.connect().await?;
    let agents = conn
        .call(requests::ListAgents {
            cwd: Some(cwd),
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&agents)?;
    } else {
        print(&render(&agents, terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The directory whose definitions to list, absolute, as the core takes it.
fn directory(given: Option<&Path>) -> Result<String, Failure> {
    let dir = match given {
        Some(dir) => dir.canonicalize().map_err(|e| {
            Failure::new(
                "invalid_argument",
                format!("--cwd {}: {e}; give an existing directory", dir.display()),
            )
        })?,
        None => std::env::current_dir().map_err(|e| {
            Failure::new(
                "io",
                format!("cannot read the current directory ({e}); pass --cwd DIR"),
            )
        })?,
    };
    if !dir.is_dir() {
        return Err(Failure::new(
            "invalid_argument",
            format!("--cwd {}: not a directory; give one", dir.display()),
        ));
    }
    into_string(dir)
}

fn into_string(dir: PathBuf) -> Result<String, Failure> {
    dir.into_os_string().into_string().map_err(|dir| {
        Failure::new(
            "invalid_argument",
            format!(
                "{}: the path is not UTF-8, which the core cannot take",
                dir.to_string_lossy()
            ),
        )
    })
}

/// The table of usable (and disabled) definitions, then the broken files.
pub fn render(agents: &[AgentDef], width: usize) -> String {
    let mut table = Table::new()
        .column("NAME", Align::Left)
        .column("SOURCE", Align::Left)
        .middle("MODEL", 7)
        .flexible("TOOLS", 5)
        .flexible("DESCRIPTION", 12);
    let (usable, broken): (Vec<&AgentDef>, Vec<&AgentDef>) =
        agents.iter().partition(|a| a.error.is_none());
    for a in &usable {
        let source = if a.enabled {
            a.source.as_str().to_string()
        } else {
            format!("{} (disabled)", a.source.as_str())
        };
        table.row(vec![
            a.name.clone(),
            source,
            model(a),
            tools(a),
            a.description.clone(),
        ]);
    }
    let mut text = table.render(width);
    if !broken.is_empty() {
        text.push_str(&format!(
            "\n{} broken (fix the file; until then its name cannot be used):\n",
            if broken.len() == 1 {
                "1 definition is".to_string()
            } else {
                format!("{} definitions are", broken.len())
            }
        ));
        for a in broken {
            let error = a.error.as_deref().unwrap_or_default();
            text.push_str(&format!("  {} ({}): {error}\n", a.name, a.source.as_str()));
        }
    }
    text
}

/// `default`, or the model, with the thinking level when set.
fn model(a: &AgentDef) -> String {
    let model = a.model.as_deref().unwrap_or("default");
    match a.thinking {
        Some(t) => format!("{model} ({})", t.as_str()),
        None => model.to_string(),
    }
}

/// `all` (Pi's default set), `none`, or the list; then what is taken away.
fn tools(a: &AgentDef) -> String {
    let base = match a.tools.as_deref() {
        None => "all".to_string(),
        Some([]) => "none".to_string(),
        Some(list) => list.join(","),
    };
    if a.exclude_tools.is_empty() {
        base
    } else {
        format!("{base} except {}", a.exclude_tools.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use shepherd_core::protocol::DefSource;

    fn def(name: &str, source: DefSource) -> AgentDef {
        AgentDef {
            name: name.into(),
            description: format!("The {name}."),
            source,
            path: None,
            model: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            agents: Vec::new(),
            ..examples::agent_def()
        }
    }

    #[test]
    fn rows_then_broken_files() {
        let agents = vec![
            AgentDef {
                exclude_tools: Vec::new(),
                description: "The docs.".into(),
                ..examples::agent_def()
            },
            AgentDef {
                exclude_tools: vec!["bash".into()],
                enabled: false,
                ..def("reviewer", DefSource::Global)
            },
            AgentDef {
                tools: Some(Vec::new()),
                ..def("scout", DefSource::Bundled)
            },
            AgentDef {
                error: Some("/p/.pi/agents/x.md: frontmatter: unknown field `colour`".into()),
                description: String::new(),
                ..def("x", DefSource::Project)
            },
        ];
        let text = render(&agents, 200);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            [
                "NAME      SOURCE             MODEL      TOOLS            DESCRIPTION",
                "docs      project            m1 (high)  read,grep        The docs.",
                "reviewer  global (disabled)  default    all except bash  The reviewer.",
                "scout     bundled            default    none             The scout.",
            ],
            "{text}"
        );
        assert_eq!(
            lines[4..],
            [
                "",
                "1 definition is broken (fix the file; until then its name cannot be used):",
                "  x (project): /p/.pi/agents/x.md: frontmatter: unknown field `colour`",
            ],
            "{text}"
        );
    }
}
