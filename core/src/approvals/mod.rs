//! # Approval policy
//!
//! Which decision a tool call gets: [`Policy::decide`] tries the user's `[approvals]`
//! (its rules, then its preset's, then its default) and, when the session works in a git
//! worktree with a `.pi/shepherd.toml`, that project's (`project`): a project may only
//! tighten, so the stricter of the two rulings wins (`deny` over `ask` over `allow`) and a
//! project file that would loosen anything (a rule or default `allow`, a setting only the
//! user decides) is refused whole, naming the file and the rule. Pure but for reading
//! the project file and resolving paths (symlinks included) for `outside = "cwd"`.

mod project;

use std::path::{Component, Path, PathBuf};

use crate::config::approvals::{
    ApprovalsConfig, BUILT_IN, Decision, Outside, PATH_TOOLS, Preset, Rule,
};

pub use project::{MAX_PROJECT_FILE, PROJECT_FILE, ProjectPolicy, project_policy};

/// One tool call, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool's name (`bash`, `write`, `edit`, …).
    pub tool: &'a str,
    /// Its arguments, as the model gave them.
    pub input: &'a serde_json::Value,
    /// The session's directory.
    pub cwd: &'a Path,
    /// The root of the git worktree the session works in, if any.
    pub worktree: Option<&'a Path>,
}

impl Call<'_> {
    /// What `match` and `regex` are tried on: a `bash` command; a path tool's path, made
    /// absolute against the session's directory; any other call's arguments as compact
    /// JSON.
    pub fn subject(&self) -> String {
        if self.tool == "bash" {
            return self.input["command"].as_str().unwrap_or("").to_string();
        }
        match self.path() {
            Some(path) => path.to_string_lossy().into_owned(),
            None => self.input.to_string(),
        }
    }

    /// A path tool's path, absolute and without `.` or `..` (lexically).
    pub fn path(&self) -> Option<PathBuf> {
        if !PATH_TOOLS.contains(&self.tool) {
            return None;
        }
        let given = self.input["path"]
            .as_str()
            .or_else(|| self.input["file_path"].as_str())?;
        Some(lexical(&self.cwd.join(given)))
    }

    /// Whether the call writes outside the session's directory and its worktree, with
    /// symlinks resolved as far as the path exists.
    fn outside_cwd(&self) -> bool {
        let Some(path) = self.path() else {
            return false;
        };
        let path = resolved(&path);
        let inside = |dir: &Path| path.starts_with(resolved(&lexical(dir)));
        !(inside(self.cwd) || self.worktree.is_some_and(inside))
    }
}

/// Where a ruling came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Rule `index` (from 1) of `origin`'s `rules`.
    Rule {
        origin: String,
        index: usize,
        rule: String,
    },
    /// Rule `index` (from 1) of the preset `origin` names.
    Preset {
        origin: String,
        preset: Preset,
        index: usize,
        rule: String,
    },
    /// No rule matched: `origin`'s `default`.
    Default { origin: String },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Rule {
                origin,
                index,
                rule,
            } => write!(f, "rule {index} of {origin} ({rule})"),
            Source::Preset {
                origin,
                preset,
                index,
                rule,
            } => write!(
                f,
                "rule {index} of the {} preset in {origin} ({rule})",
                match preset {
                    Preset::Careful => "careful",
                }
            ),
            Source::Default { origin } if origin == BUILT_IN => {
                write!(f, "no rule matches: the default (no config file)")
            }
            Source::Default { origin } => write!(f, "no rule matches: the default of {origin}"),
        }
    }
}

/// A decision and what made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ruling {
    pub decision: Decision,
    pub source: Source,
}

/// One set of rules: the user's config or a project's file.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Where it was written (a file path, or `the built-in defaults`).
    pub origin: String,
    pub rules: Vec<Rule>,
    pub preset: Option<Preset>,
    /// `None`: no default of its own (a project file that sets none).
    pub default: Option<Decision>,
}

impl Layer {
    /// The user's `[approvals]`, written in `origin`.
    pub fn user(config: &ApprovalsConfig, origin: &str) -> Layer {
        Layer {
            origin: origin.to_string(),
            rules: config.rules.clone(),
            preset: config.preset,
            default: Some(config.default),
        }
    }

    /// The first of its rules (then its preset's) that matches `call`, else its default.
    fn decide(&self, call: &Call<'_>) -> Option<Ruling> {
        let subject = call.subject();
        let origin = || self.origin.clone();
        for (i, rule) in self.rules.iter().enumerate() {
            if applies(rule, call, &subject) {
                let source = Source::Rule {
                    origin: origin(),
                    index: i + 1,
                    rule: rule.describe(),
                };
                return Some(Ruling {
                    decision: rule.spec.decision,
                    source,
                });
            }
        }
        if let Some(preset) = self.preset {
            for (i, rule) in preset.rules().iter().enumerate() {
                if applies(rule, call, &subject) {
                    let source = Source::Preset {
                        origin: origin(),
                        preset,
                        index: i + 1,
                        rule: rule.describe(),
                    };
                    return Some(Ruling {
                        decision: rule.spec.decision,
                        source,
                    });
                }
            }
        }
        self.default.map(|decision| Ruling {
            decision,
            source: Source::Default { origin: origin() },
        })
    }
}

/// Whether `rule` is about this call: its tool, its pattern on the subject, its `outside`.
fn applies(rule: &Rule, call: &Call<'_>, subject: &str) -> bool {
    rule.spec.tool.covers(call.tool)
        && rule.matches_subject(subject)
        && match rule.spec.outside {
            Some(Outside::Cwd) => call.outside_cwd(),
            None => true,
        }
}

/// The user's policy (built once: its patterns keep their compiled state across calls)
/// and, when one applies, the project's.
#[derive(Debug, Clone)]
pub struct Policy {
    pub user: std::sync::Arc<Layer>,
    pub project: Option<Layer>,
}

impl Policy {
    /// The decision for `call`: the stricter of the user's and the project's rulings (the
    /// user's when they agree).
    pub fn decide(&self, call: &Call<'_>) -> Ruling {
        let user = self.user.decide(call).unwrap_or(Ruling {
            decision: Decision::Allow,
            source: Source::Default {
                origin: self.user.origin.clone(),
            },
        });
        match self.project.as_ref().and_then(|p| p.decide(call)) {
            Some(project) if project.decision > user.decision => project,
            _ => user,
        }
    }
}

/// The file beside the socket that tells the extension, when it cannot reach the core,
/// whether a policy is on and what an unreachable core means (`when_unreachable`).
pub const SUMMARY_FILE: &str = "approvals.json";

/// Write [`SUMMARY_FILE`] beside `socket` (0600): `{"active", "when_unreachable"}`. It
/// stays after the core stops: that is when the extension reads it. Best effort: a
/// failure is logged (the extension then fails closed only if an older file says so).
pub fn write_summary(socket: &Path, config: &crate::config::ApprovalsConfig) {
    let Some(dir) = socket.parent() else { return };
    let path = dir.join(SUMMARY_FILE);
    let body = serde_json::json!({
        "active": config.is_active(),
        "when_unreachable": match config.when_unreachable {
            crate::config::approvals::Fallback::Allow => "allow",
            crate::config::approvals::Fallback::Deny => "deny",
        },
    });
    let written = crate::files::open_private(&path).and_then(|mut f| {
        use std::io::Write;
        f.set_len(0)?;
        f.write_all(format!("{body}\n").as_bytes())
    });
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the approvals summary for the extension");
    }
}

/// `path` without `.` and with each `..` taking its parent away, as written.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with its longest existing ancestor's symlinks resolved, the rest appended.
fn resolved(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests;
