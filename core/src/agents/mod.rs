//! # Agent definitions
//!
//! What a managed worker is started from: a Markdown file with strict YAML frontmatter
//! (`name`, `description`, `model`, `thinking`, `tools`, `excludeTools`, `agents`,
//! `enabled`; [`parse`]) whose body is appended to the worker's system prompt.
//!
//! Three places, highest precedence first: the project's `<cwd>/.pi/agents/*.md`, the
//! user's `<agent dir>/agents/*.md`, and the bundled ones (`core/agents/*.md`, compiled in:
//! `scout`, `implementer`, `reviewer`). A name defined in a higher place hides the lower
//! ones, also when that file is broken or disabled: a typo in a project's `scout.md`
//! makes `scout` unusable there (with the error) instead of silently falling back to the
//! bundled scout. A file that cannot be used (unreadable, no frontmatter, an unknown or
//! bad field, a reserved or duplicate name) is never skipped: [`effective`] lists it with
//! its error, which names the file and the field, and [`resolve`] refuses its name.
//!
//! A definition may come from a repository someone else wrote: it is untrusted input. Only
//! a regular file is read (never a FIFO or a device), at most [`parse::MAX_FILE_BYTES`],
//! and its frontmatter is refused before YAML parses it when it is larger than
//! [`parse::MAX_FRONTMATTER_BYTES`] or nested deeper than [`parse::MAX_DEPTH`] (a
//! deeply nested value made the YAML parser quadratic); such a file is listed as broken with
//! the reason.
//!
//! Everything here reads files: call it off the hub (the hub's `list_agents` handler, and a
//! launch's definition lookup, run it on a blocking thread).

pub mod parse;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::protocol::{AgentDef, DefSource};

/// The bundled definitions: (file name, text).
const BUNDLED: [(&str, &str); 3] = [
    ("scout.md", include_str!("../../agents/scout.md")),
    (
        "implementer.md",
        include_str!("../../agents/implementer.md"),
    ),
    ("reviewer.md", include_str!("../../agents/reviewer.md")),
];

/// A usable definition with its prompt: what a worker is launched from.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub def: AgentDef,
    /// The file's body, appended to the worker's system prompt (may be empty).
    pub prompt: String,
}

/// Why a definition cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DefError {
    #[error(
        "no agent definition named {name:?} (looked in {looked}); list_agents (or \
         `shepherd agents`) lists the definitions"
    )]
    Unknown { name: String, looked: String },
    #[error(
        "the agent definition {name:?} ({place}) is disabled (`enabled: false`); enable it \
         there or use another definition"
    )]
    Disabled { name: String, place: String },
    #[error("the agent definition {name:?} cannot be used: {error}; fix the file")]
    Broken { name: String, error: String },
    #[error(
        "{name:?} is a reserved name (manager, chief and managed-lead are roles, not agent \
         definitions); use another definition"
    )]
    Reserved { name: String },
}

impl DefError {
    /// The `worker_refused` reason this refusal goes out as.
    pub fn reason(&self) -> &'static str {
        match self {
            DefError::Disabled { .. } => "definition_disabled",
            DefError::Unknown { .. } | DefError::Broken { .. } | DefError::Reserved { .. } => {
                "unknown_definition"
            }
        }
    }
}

/// The project's definitions directory for a cwd.
pub fn project_dir(cwd: &Path) -> PathBuf {
    cwd.join(".pi").join("agents")
}

/// The user's definitions directory under Pi's agent dir.
pub fn global_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("agents")
}

/// Every definition in effect for `cwd` (none: only the global and bundled ones): the
/// usable and disabled ones by name, one per name (the highest place wins), then every
/// broken file with its error.
pub fn effective(cwd: Option<&Path>, agent_dir: &Path) -> Vec<AgentDef> {
    let table = Table::read(cwd, agent_dir);
    let mut winners: Vec<AgentDef> = table
        .by_name
        .values()
        .map(|&i| &table.all[i].def)
        .filter(|d| d.error.is_none())
        .cloned()
        .collect();
    winners.sort_by(|a, b| a.name.cmp(&b.name));
    winners.extend(
        table
            .all
            .iter()
            .filter(|l| l.def.error.is_some())
            .map(|l| l.def.clone()),
    );
    winners
}

/// The definition `name` as it is in effect for `cwd`, with its prompt; refused when no
/// place defines it, when the winning file is broken or disabled, and for a reserved name.
pub fn resolve(name: &str, cwd: &Path, agent_dir: &Path) -> Result<Definition, DefError> {
    if parse::RESERVED.contains(&name) {
        return Err(DefError::Reserved { name: name.into() });
    }
    let mut table = Table::read(Some(cwd), agent_dir);
    let Some(&i) = table.by_name.get(name) else {
        return Err(DefError::Unknown {
            name: name.into(),
            looked: format!(
                "{}, {} and the bundled ones",
                project_dir(cwd).display(),
                global_dir(agent_dir).display()
            ),
        });
    };
    let found = table.all.swap_remove(i);
    if let Some(error) = found.def.error {
        return Err(DefError::Broken {
            name: name.into(),
            error,
        });
    }
    if !found.def.enabled {
        let place = match &found.def.path {
            Some(path) => format!("{}, {path}", found.def.source.as_str()),
            None => "bundled".to_string(),
        };
        return Err(DefError::Disabled {
            name: name.into(),
            place,
        });
    }
    Ok(found)
}

/// Every file of every place, and which one each name resolves to.
struct Table {
    /// Highest place first, each place's files by file name.
    all: Vec<Definition>,
    /// Name → index in `all` of the file that decides it.
    by_name: HashMap<String, usize>,
}

impl Table {
    fn read(cwd: Option<&Path>, agent_dir: &Path) -> Table {
        let mut table = Table {
            all: Vec::new(),
            by_name: HashMap::new(),
        };
        if let Some(cwd) = cwd {
            table.add_place(read_dir(&project_dir(cwd), DefSource::Project));
        }
        table.add_place(read_dir(&global_dir(agent_dir), DefSource::Global));
        table.add_place(bundled());
        table
    }

    /// Add one place's files: a name already decided by a higher place stays so; a name
    /// twice in this place makes the later file (by file name) broken.
    fn add_place(&mut self, files: Vec<(Definition, Claim)>) {
        let mut here: HashMap<String, String> = HashMap::new();
        for (mut found, claim) in files {
            let Claim::Name(name) = claim else {
                self.all.push(found);
                continue;
            };
            let place = found.def.path.clone().unwrap_or_else(|| "bundled".into());
            if let Some(first) = here.get(&name) {
                if found.def.error.is_none() {
                    found.def.error = Some(format!(
                        "{place}: the name `{name}` is already defined in {first}; one file per name"
                    ));
                }
                self.all.push(found);
                continue;
            }
            here.insert(name.clone(), place);
            self.by_name.entry(name).or_insert(self.all.len());
            self.all.push(found);
        }
    }
}

/// Which name a file decides.
enum Claim {
    Name(String),
    /// Not a definition at all (an unreadable directory).
    Nothing,
}

/// The bundled definitions.
fn bundled() -> Vec<(Definition, Claim)> {
    BUNDLED
        .iter()
        .map(|(file, text)| load(file, None, text, DefSource::Bundled))
        .collect()
}

/// The `*.md` files of one directory, by file name; none when it does not exist.
fn read_dir(dir: &Path, source: DefSource) -> Vec<(Definition, Claim)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            let error = format!("{}: cannot read the directory: {e}", dir.display());
            let def = broken_def("agents", source, Some(dir), error);
            let found = Definition {
                def,
                prompt: String::new(),
            };
            return vec![(found, Claim::Nothing)];
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
            let file = file.unwrap_or_default();
            match read_text(&path) {
                Ok(text) => load(&file, Some(&path), &text, source),
                Err(error) => {
                    let name = stem(&file);
                    let error = format!("{}: {error}", path.display());
                    let def = broken_def(&name, source, Some(&path), error);
                    let found = Definition {
                        def,
                        prompt: String::new(),
                    };
                    (found, Claim::Name(name))
                }
            }
        })
        .collect()
}

/// A file's text, refused when it is not a regular file (a FIFO is never opened blocking,
/// a device never read), too large, slow to read, or not UTF-8.
fn read_text(path: &Path) -> Result<String, String> {
    let (file, len) =
        crate::files::open_regular(path).map_err(|e| format!("cannot read it: {e}"))?;
    if len > parse::MAX_FILE_BYTES {
        return Err(format!(
            "{len} bytes is too large for a definition (at most {} KiB)",
            parse::MAX_FILE_BYTES / 1024
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    crate::files::Limited::new(file, parse::MAX_FILE_BYTES, READ_TIME)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

/// Longest one definition file is read for.
const READ_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// One definition from its text; `path` is None for a bundled one.
fn load(file: &str, path: Option<&Path>, text: &str, source: DefSource) -> (Definition, Claim) {
    let shown = path.map_or_else(|| format!("bundled {file}"), |p| p.display().to_string());
    match parse::parse(text) {
        Ok((fm, prompt)) => {
            let def = AgentDef {
                name: fm.name.clone(),
                description: fm.description.trim().to_string(),
                source,
                path: path.map(|p| p.display().to_string()),
                model: fm.model,
                thinking: fm.thinking,
                tools: fm.tools,
                exclude_tools: fm.exclude_tools,
                agents: fm.agents,
                enabled: fm.enabled,
                error: None,
            };
            (Definition { def, prompt }, Claim::Name(fm.name))
        }
        Err(broken) => {
            let name = broken.name.unwrap_or_else(|| stem(file));
            let error = format!("{shown}: {}", broken.error);
            let def = broken_def(&name, source, path, error);
            let found = Definition {
                def,
                prompt: String::new(),
            };
            (found, Claim::Name(name))
        }
    }
}

/// The record of a file that cannot be used.
fn broken_def(name: &str, source: DefSource, path: Option<&Path>, error: String) -> AgentDef {
    AgentDef {
        name: name.to_string(),
        description: String::new(),
        source,
        path: path.map(|p| p.display().to_string()),
        model: None,
        thinking: None,
        tools: None,
        exclude_tools: Vec::new(),
        agents: Vec::new(),
        enabled: true,
        error: Some(error),
    }
}

/// A file name without `.md`.
fn stem(file: &str) -> String {
    file.strip_suffix(".md").unwrap_or(file).to_string()
}

#[cfg(test)]
mod tests;
