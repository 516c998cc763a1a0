//! Definitions read from real files in temp directories: one test per rule of
//! [`super::effective`] and [`super::resolve`].

use std::path::Path;

use tempfile::TempDir;

use super::*;
use crate::protocol::Thinking;

/// A cwd and an agent dir, both empty.
struct Places {
    cwd: TempDir,
    agent_dir: TempDir,
}

impl Places {
    fn new() -> Places {
        Places {
            cwd: tempfile::tempdir().unwrap(),
            agent_dir: tempfile::tempdir().unwrap(),
        }
    }

    fn project(&self, file: &str, text: &str) -> PathBuf {
        write(&project_dir(self.cwd.path()), file, text)
    }

    fn global(&self, file: &str, text: &str) -> PathBuf {
        write(&global_dir(self.agent_dir.path()), file, text)
    }

    fn effective(&self) -> Vec<AgentDef> {
        effective(Some(self.cwd.path()), self.agent_dir.path())
    }

    fn resolve(&self, name: &str) -> Result<Definition, DefError> {
        resolve(name, self.cwd.path(), self.agent_dir.path())
    }
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

fn def(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nPrompt of {name}.\n")
}

fn named<'a>(defs: &'a [AgentDef], name: &str) -> Vec<&'a AgentDef> {
    defs.iter().filter(|d| d.name == name).collect()
}

#[test]
fn with_no_files_the_bundled_ones_are_in_effect() {
    let p = Places::new();
    let defs = p.effective();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["implementer", "reviewer", "scout"]);
    for d in &defs {
        assert_eq!(d.source, DefSource::Bundled);
        assert_eq!(d.path, None);
        assert_eq!(d.error, None, "{}", d.name);
        assert!(d.enabled && !d.description.is_empty());
        assert!(d.agents.is_empty(), "bundled ones are leaves");
    }
    let read_only = Some(
        vec!["read", "grep", "find", "ls"]
            .into_iter()
            .map(String::from)
            .collect(),
    );
    assert_eq!(named(&defs, "scout")[0].tools, read_only);
    assert_eq!(named(&defs, "reviewer")[0].tools, read_only);
    assert_eq!(named(&defs, "implementer")[0].tools, None, "full tools");
    let scout = p.resolve("scout").unwrap();
    assert!(
        scout.prompt.starts_with("You are a scout"),
        "{}",
        scout.prompt
    );
}

#[test]
fn a_global_file_overrides_the_bundled_one() {
    let p = Places::new();
    let path = p.global(
        "scout.md",
        "---\nname: scout\ndescription: My scout.\nmodel: m1\nthinking: low\n---\nLook around.\n",
    );
    let defs = p.effective();
    let scouts = named(&defs, "scout");
    assert_eq!(scouts.len(), 1, "{defs:?}");
    assert_eq!(scouts[0].source, DefSource::Global);
    assert_eq!(scouts[0].path.as_deref(), Some(path.to_str().unwrap()));
    assert_eq!(scouts[0].model.as_deref(), Some("m1"));
    assert_eq!(scouts[0].thinking, Some(Thinking::Low));
    assert_eq!(scouts[0].tools, None);
    let found = p.resolve("scout").unwrap();
    assert_eq!(found.def.description, "My scout.");
    assert_eq!(found.prompt, "Look around.");
}

#[test]
fn a_project_file_overrides_the_global_and_bundled_ones() {
    let p = Places::new();
    p.global("scout.md", &def("scout", "Global scout."));
    p.global("docs.md", &def("docs", "Global docs."));
    p.project("s.md", &def("scout", "Project scout."));
    p.project("docs.md", &def("docs", "Project docs."));
    let defs = p.effective();
    for name in ["scout", "docs"] {
        let found = named(&defs, name);
        assert_eq!(found.len(), 1, "{defs:?}");
        assert_eq!(found[0].source, DefSource::Project, "{name}");
    }
    assert_eq!(p.resolve("docs").unwrap().def.description, "Project docs.");
    assert_eq!(p.resolve("scout").unwrap().prompt, "Prompt of scout.");
    // Names are sorted across places.
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["docs", "implementer", "reviewer", "scout"]);
}

#[test]
fn without_a_cwd_only_global_and_bundled_count() {
    let p = Places::new();
    p.project("docs.md", &def("docs", "Project docs."));
    p.global("scout.md", &def("scout", "Global scout."));
    let defs = effective(None, p.agent_dir.path());
    assert!(named(&defs, "docs").is_empty(), "{defs:?}");
    assert_eq!(named(&defs, "scout")[0].source, DefSource::Global);
}

#[test]
fn a_broken_file_is_listed_with_its_error_naming_file_and_field() {
    let p = Places::new();
    let path = p.global(
        "docs.md",
        "---\nname: docs\ndescription: Docs.\ncolour: red\n---\nbody\n",
    );
    let defs = p.effective();
    let docs = named(&defs, "docs");
    assert_eq!(docs.len(), 1, "{defs:?}");
    let error = docs[0].error.as_deref().unwrap();
    assert!(
        error.starts_with(&format!("{}: ", path.display())),
        "{error}"
    );
    assert!(error.contains("unknown field `colour`"), "{error}");
    assert_eq!(docs[0].source, DefSource::Global);
    // Broken files come after the usable ones.
    assert_eq!(defs.last().unwrap().name, "docs");
    match p.resolve("docs") {
        Err(e @ DefError::Broken { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("colour") && text.contains("docs.md"),
                "{text}"
            );
            assert_eq!(e.reason(), "unknown_definition");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_broken_file_without_a_readable_name_is_listed_under_its_file_name() {
    let p = Places::new();
    p.project("notes.md", "just some notes\n");
    p.project("bad-yaml.md", "---\nname: [x\n---\n");
    let defs = p.effective();
    let notes = named(&defs, "notes");
    assert!(
        notes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no YAML frontmatter"),
        "{notes:?}"
    );
    assert!(named(&defs, "bad-yaml")[0].error.is_some(), "{defs:?}");
}

#[test]
fn a_broken_higher_file_hides_the_lower_definition() {
    let p = Places::new();
    p.project(
        "scout.md",
        "---\nname: scout\ndescription: d\nthinking: huge\n---\n",
    );
    let defs = p.effective();
    let scouts = named(&defs, "scout");
    assert_eq!(
        scouts.len(),
        1,
        "the bundled scout is not offered: {defs:?}"
    );
    assert_eq!(scouts[0].source, DefSource::Project);
    assert!(
        scouts[0]
            .error
            .as_deref()
            .unwrap()
            .contains("thinking: unknown variant")
    );
    assert!(matches!(p.resolve("scout"), Err(DefError::Broken { .. })));
}

#[test]
fn a_disabled_definition_is_listed_and_refused() {
    let p = Places::new();
    p.project(
        "reviewer.md",
        "---\nname: reviewer\ndescription: Off here.\nenabled: false\n---\n",
    );
    let defs = p.effective();
    let reviewers = named(&defs, "reviewer");
    assert_eq!(reviewers.len(), 1);
    assert!(!reviewers[0].enabled);
    assert_eq!(reviewers[0].error, None);
    match p.resolve("reviewer") {
        Err(e @ DefError::Disabled { .. }) => {
            assert_eq!(e.reason(), "definition_disabled");
            let text = e.to_string();
            assert!(
                text.contains("project") && text.contains("reviewer.md"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_name_is_refused_saying_where_it_looked() {
    let p = Places::new();
    match p.resolve("ghost") {
        Err(e @ DefError::Unknown { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(".pi/agents") && text.contains("list_agents"),
                "{text}"
            );
            assert_eq!(e.reason(), "unknown_definition");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reserved_names_are_refused_as_definitions() {
    let p = Places::new();
    p.global("manager.md", &def("manager", "Not allowed."));
    p.project("lead.md", &def("managed-lead", "Not allowed."));
    let defs = p.effective();
    for name in ["manager", "managed-lead"] {
        let found = named(&defs, name);
        assert_eq!(found.len(), 1, "{defs:?}");
        assert!(
            found[0].error.as_deref().unwrap().contains("is reserved"),
            "{found:?}"
        );
    }
    for name in ["manager", "chief", "managed-lead"] {
        match p.resolve(name) {
            Err(e @ DefError::Reserved { .. }) => assert!(e.to_string().contains("reserved")),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_name_twice_in_one_place_breaks_the_second_file() {
    let p = Places::new();
    let first = p.project("a.md", &def("docs", "First."));
    let second = p.project("b.md", &def("docs", "Second."));
    let defs = p.effective();
    let docs = named(&defs, "docs");
    assert_eq!(docs.len(), 2, "{defs:?}");
    assert_eq!(docs[0].error, None);
    assert_eq!(docs[0].path.as_deref(), Some(first.to_str().unwrap()));
    let error = docs[1].error.as_deref().unwrap();
    assert!(
        error.starts_with(second.to_str().unwrap())
            && error.contains(&format!("already defined in {}", first.display())),
        "{error}"
    );
    assert_eq!(p.resolve("docs").unwrap().def.description, "First.");
}

#[test]
fn only_md_files_are_read_and_missing_places_are_empty() {
    let p = Places::new();
    p.project("docs.txt", "not a definition");
    p.project("README", "not a definition");
    let defs = p.effective();
    assert_eq!(defs.len(), 3, "{defs:?}");
    let nowhere = Path::new("/nonexistent/shepherd-agents-test");
    assert_eq!(effective(Some(nowhere), nowhere).len(), 3);
}

#[test]
fn unreadable_text_and_unreadable_places_are_listed() {
    let p = Places::new();
    let dir = project_dir(p.cwd.path());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
    let big = format!("{}{}", def("big", "Big."), "x".repeat(300 * 1024));
    p.project("big.md", &big);
    std::fs::create_dir(dir.join("sub.md")).unwrap();
    // The global place is a file, not a directory.
    std::fs::write(p.agent_dir.path().join("agents"), "oops").unwrap();
    let defs = p.effective();
    let error_of = |name: &str| named(&defs, name)[0].error.clone().unwrap_or_default();
    assert!(error_of("bin").contains("not UTF-8"), "{defs:?}");
    assert!(error_of("big").contains("too large"), "{defs:?}");
    assert!(error_of("sub").contains("not a regular file"), "{defs:?}");
    assert!(
        error_of("agents").contains("cannot read the directory"),
        "{defs:?}"
    );
    assert!(matches!(p.resolve("big"), Err(DefError::Broken { .. })));
    // The bundled ones are still there.
    assert_eq!(p.resolve("scout").unwrap().def.source, DefSource::Bundled);
}
