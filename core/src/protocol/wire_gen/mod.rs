//! # The TypeScript wire, generated from these types
//!
//! `pi-ext/wire/generated/` (the extension's protocol types, closed sets of names and
//! checked decoders) is written from the Rust protocol types: schemars derives their JSON
//! Schema (`#[cfg_attr(test, derive(schemars::JsonSchema))]` on each, so only this crate's
//! unit tests build it), [`model`] reads it into records and messages with what absence and
//! null mean for each field, [`emit`] writes the TypeScript. The test below regenerates the
//! files into memory and fails when the committed ones differ; with `SHEPHERD_REGENERATE=1`
//! it writes them instead. The golden fixtures (`tests/fixtures/protocol/`) stay the
//! cross-language check of what both sides actually send.

mod emit;
mod model;

use std::path::{Path, PathBuf};

/// The generated files' directory, from the repository root.
const TARGET: &str = "pi-ext/wire/generated";

/// What regenerates them.
const COMMAND: &str = "SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen";

fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(TARGET)
}

#[test]
fn the_typescript_wire_is_generated_from_the_protocol_types() {
    let files = emit::typescript(&model::read(), COMMAND);
    if std::env::var_os("SHEPHERD_REGENERATE").is_some() {
        std::fs::create_dir_all(target()).unwrap();
        for (name, text) in &files {
            std::fs::write(target().join(name), text).unwrap();
        }
    }
    let mut committed: Vec<String> = std::fs::read_dir(target())
        .map(|dir| {
            dir.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    committed.sort();
    let mut wanted: Vec<String> = files.iter().map(|(name, _)| name.to_string()).collect();
    wanted.sort();
    assert_eq!(
        committed, wanted,
        "{TARGET} holds other files than the generator writes"
    );
    for (name, text) in &files {
        let on_disk = std::fs::read_to_string(target().join(name)).unwrap_or_default();
        if on_disk != *text {
            let line = on_disk
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| on_disk.lines().count().min(text.lines().count()));
            panic!(
                "{TARGET}/{name} is stale: run {COMMAND}\n(first difference at line {}: {:?}, generated {:?})",
                line + 1,
                on_disk.lines().nth(line).unwrap_or("<end of file>"),
                text.lines().nth(line).unwrap_or("<end of file>"),
            );
        }
    }
}
