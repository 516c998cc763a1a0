//! # shepherd
//!
//! The `shepherd` binary: `shepherd up` runs the core; every other command is a client of
//! the running core (or, for `doctor`, an inspection of the installation). Parsing and
//! dispatch only; the commands live in [`cli`].

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc, not the C library's allocator: the core allocates and frees a few dozen small
/// buffers for each message it routes, and that work shows in its CPU per message.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main(cli::Cli::parse())
}
