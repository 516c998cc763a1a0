//! # `shepherd install`
//!
//! Puts the Pi extension where Pi loads it, idempotently. The extension's files are
//! embedded in this binary (so an installed `shepherd` carries the matching extension,
//! no checkout needed) and written to `<agent dir>/shepherd/pi-ext/`; that directory is
//! added to `packages` in Pi's `<agent dir>/settings.json`, the same entry
//! `pi install <dir>` writes. Other settings, and their order, are kept. Pi loads the
//! extension in new sessions (`/reload` in a running one). `shepherd doctor` uses the
//! same inspection to say whether the installed copy is current.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use shepherd_core::config;

use super::{Ctx, Failure, print, print_json};

/// The extension, as built into this binary: (path below the extension's directory,
/// contents). A test checks this list against `pi-ext/`, `pi-ext/wire/` and
/// `pi-ext/wire/generated/` so no file is forgotten.
pub const EXTENSION_FILES: &[(&str, &str)] = &[
    ("package.json", include_str!("../../pi-ext/package.json")),
    ("index.ts", include_str!("../../pi-ext/index.ts")),
    ("session.ts", include_str!("../../pi-ext/session.ts")),
    ("client.ts", include_str!("../../pi-ext/client.ts")),
    ("connection.ts", include_str!("../../pi-ext/connection.ts")),
    (
        "human-tools.ts",
        include_str!("../../pi-ext/human-tools.ts"),
    ),
    ("tool-glue.ts", include_str!("../../pi-ext/tool-glue.ts")),
    ("approvals.ts", include_str!("../../pi-ext/approvals.ts")),
    ("autostart.ts", include_str!("../../pi-ext/autostart.ts")),
    ("config.ts", include_str!("../../pi-ext/config.ts")),
    ("dedupe.ts", include_str!("../../pi-ext/dedupe.ts")),
    ("inbox.ts", include_str!("../../pi-ext/inbox.ts")),
    ("outbox.ts", include_str!("../../pi-ext/outbox.ts")),
    ("result.ts", include_str!("../../pi-ext/result.ts")),
    ("wire.ts", include_str!("../../pi-ext/wire.ts")),
    (
        "wire/fields.ts",
        include_str!("../../pi-ext/wire/fields.ts"),
    ),
    (
        "wire/decode.ts",
        include_str!("../../pi-ext/wire/decode.ts"),
    ),
    ("wire/frame.ts", include_str!("../../pi-ext/wire/frame.ts")),
    (
        "wire/generated/names.ts",
        include_str!("../../pi-ext/wire/generated/names.ts"),
    ),
    (
        "wire/generated/records.ts",
        include_str!("../../pi-ext/wire/generated/records.ts"),
    ),
    (
        "wire/generated/client.ts",
        include_str!("../../pi-ext/wire/generated/client.ts"),
    ),
    (
        "wire/generated/server.ts",
        include_str!("../../pi-ext/wire/generated/server.ts"),
    ),
    (
        "wire/generated/decoders.ts",
        include_str!("../../pi-ext/wire/generated/decoders.ts"),
    ),
    (
        "supervise-pi.ts",
        include_str!("../../pi-ext/supervise-pi.ts"),
    ),
    (
        "supervise-args.ts",
        include_str!("../../pi-ext/supervise-args.ts"),
    ),
    (
        "supervision.ts",
        include_str!("../../pi-ext/supervision.ts"),
    ),
    ("toolset.ts", include_str!("../../pi-ext/toolset.ts")),
    ("policy.ts", include_str!("../../pi-ext/policy.ts")),
    ("prune.ts", include_str!("../../pi-ext/prune.ts")),
    ("roles.ts", include_str!("../../pi-ext/roles.ts")),
    ("role-tools.ts", include_str!("../../pi-ext/role-tools.ts")),
    ("workers.ts", include_str!("../../pi-ext/workers.ts")),
    (
        "worker-tools.ts",
        include_str!("../../pi-ext/worker-tools.ts"),
    ),
    (
        "project-tools.ts",
        include_str!("../../pi-ext/project-tools.ts"),
    ),
    ("README.md", include_str!("../../pi-ext/README.md")),
];

/// Where `shepherd install` puts the extension.
pub fn extension_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("shepherd").join("pi-ext")
}

/// Files of the installed copy that are missing or differ from this binary's.
pub fn stale_files(dir: &Path) -> Vec<&'static str> {
    EXTENSION_FILES
        .iter()
        .filter(|(name, contents)| {
            std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(*contents)
        })
        .map(|(name, _)| *name)
        .collect()
}

/// The `packages` entries of Pi's settings that are a shepherd extension (by resolved
/// path: the installed copy, or a checkout's `pi-ext`), as resolved absolute paths.
pub fn configured_extensions(settings: &serde_json::Value, agent_dir: &Path) -> Vec<PathBuf> {
    let Some(entries) = settings.get("packages").and_then(|v| v.as_array()) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            entry
                .as_str()
                .or_else(|| entry.get("source").and_then(|s| s.as_str()))
        })
        .filter(|source| !source.contains(':') || source.starts_with('/'))
        .map(|source| resolve(agent_dir, source))
        .filter(|path| is_shepherd_extension(path))
        .collect()
}

/// A local package source resolved as Pi does: relative to the settings file's folder.
fn resolve(agent_dir: &Path, source: &str) -> PathBuf {
    let path = match source.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(source), |h| PathBuf::from(h).join(rest)),
        None => agent_dir.join(source),
    };
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// A directory whose package.json names the shepherd extension.
fn is_shepherd_extension(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|p| p["name"] == "shepherd-pi-ext")
}

/// Read Pi's settings, or an empty object when there are none.
pub fn read_settings(path: &Path) -> Result<serde_json::Value, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(serde_json::json!({})),
        Ok(text) => {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                Failure::new(
                    "invalid_settings",
                    format!("{} is not valid JSON ({e}); fix it (Pi cannot read it either), then run this again", path.display()),
                )
            })?;
            if !value.is_object() {
                return Err(Failure::new(
                    "invalid_settings",
                    format!(
                        "{} is not a JSON object; fix it, then run this again",
                        path.display()
                    ),
                ));
            }
            Ok(value)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::json!({})),
        Err(e) => Err(Failure::new(
            "io",
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

#[derive(Serialize)]
struct Report {
    extension_dir: PathBuf,
    settings: PathBuf,
    files_written: Vec<&'static str>,
    settings_changed: bool,
    also_configured: Vec<PathBuf>,
}

/// Run `shepherd install`.
pub fn run(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let agent_dir = config::agent_dir().map_err(|e| Failure::new("config", e.to_string()))?;
    let dir = extension_dir(&agent_dir);
    let settings_path = agent_dir.join("settings.json");
    // Read settings first: a broken file stops us before anything is written.
    let mut settings = read_settings(&settings_path)?;

    // The state directory is private (0700), as `shepherd up` makes it.
    let state_dir = dir.parent().expect("pi-ext has a parent");
    shepherd_core::files::private_dir(state_dir).map_err(|e| Failure::new("io", e.to_string()))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::new("io", format!("cannot create {}: {e}", dir.display())))?;
    let files_written = stale_files(&dir);
    for name in &files_written {
        let contents = EXTENSION_FILES
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
            .unwrap_or_default();
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::new("io", format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        write_atomically(&path, contents.as_bytes())?;
    }

    let dir_text = dir.display().to_string();
    let configured = configured_extensions(&settings, &agent_dir);
    let ours = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    let settings_changed = !configured.contains(&ours);
    if settings_changed {
        let packages = settings
            .as_object_mut()
            .expect("checked to be an object")
            .entry("packages")
            .or_insert_with(|| serde_json::json!([]));
        let Some(list) = packages.as_array_mut() else {
            return Err(Failure::new(
                "invalid_settings",
                format!(
                    "`packages` in {} is not a list; fix it, then run this again",
                    settings_path.display()
                ),
            )
            .into());
        };
        list.push(serde_json::Value::String(dir_text.clone()));
        let mut text = serde_json::to_string_pretty(&settings)?;
        text.push('\n');
        write_atomically(&settings_path, text.as_bytes())?;
    }
    let also_configured: Vec<PathBuf> = configured.into_iter().filter(|p| p != &ours).collect();

    let report = Report {
        extension_dir: dir.clone(),
        settings: settings_path.clone(),
        files_written,
        settings_changed,
        also_configured,
    };
    if ctx.json {
        print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    if report.files_written.is_empty() && !report.settings_changed {
        text += &*format!("the shepherd extension is already installed and current: {dir_text}\n");
    } else {
        if !report.files_written.is_empty() {
            text += &*format!(
                "wrote the shepherd extension to {dir_text} ({})\n",
                report.files_written.join(", ")
            );
        }
        if report.settings_changed {
            text += &*format!("added it to Pi's packages in {}\n", settings_path.display());
        }
        text += "Pi loads it in new sessions; in a running session, type /reload\n";
    }
    for other in &report.also_configured {
        text += &*format!(
            "warning: Pi also loads another copy from {}; two copies would both connect: remove it with `pi remove {}`\n",
            other.display(),
            other.display()
        );
    }
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Write through a temporary file and rename, so a crash never leaves half a file.
fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), Failure> {
    let tmp = path.with_extension("shepherd-tmp");
    let fail =
        |e: std::io::Error| Failure::new("io", format!("cannot write {}: {e}", path.display()));
    std::fs::write(&tmp, contents).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file Pi needs from `pi-ext/` is embedded: the manifest, every TypeScript
    /// module outside the tests (also those in `wire/` and `wire/generated/`), and nothing
    /// that is not there.
    #[test]
    fn embedded_files_match_the_extension_directory() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("pi-ext");
        let names = |sub: &str| -> Vec<String> {
            std::fs::read_dir(root.join(sub))
                .unwrap()
                .flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if sub.is_empty() {
                        name
                    } else {
                        format!("{sub}/{name}")
                    }
                })
                .collect()
        };
        let mut on_disk: Vec<String> = names("")
            .into_iter()
            .chain(names("wire"))
            .chain(names("wire/generated"))
            .filter(|n| n.ends_with(".ts") || n == "package.json" || n == "README.md")
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> =
            EXTENSION_FILES.iter().map(|(n, _)| n.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        let manifest: serde_json::Value = serde_json::from_str(EXTENSION_FILES[0].1).unwrap();
        assert_eq!(manifest["name"], "shepherd-pi-ext");
        assert_eq!(
            manifest["pi"]["extensions"],
            serde_json::json!(["./index.ts"])
        );
    }
}
