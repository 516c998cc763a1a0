//! # `shepherd completions` and `shepherd man`
//!
//! What a shell and `man` need, written from the command line's own definition (the clap
//! `Cli`), so they never drift from it: a completion script for bash, zsh, fish, elvish or
//! PowerShell (clap_complete), and the manual page in roff (clap_mangen). Each is built
//! in memory, then printed: a reader that goes away early (`| head`) ends the output, not
//! the program with a panic.

use std::process::ExitCode;

use clap::CommandFactory;

use super::{Cli, print};

/// Print the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "shepherd", &mut script);
    out(&script)
}

/// Print the manual page.
pub fn man() -> anyhow::Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    out(&page)
}

fn out(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    match print(&String::from_utf8_lossy(bytes)) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(ExitCode::SUCCESS)
        }
        other => other.map(|()| ExitCode::SUCCESS),
    }
}
