//! # shepherd
//!
//! The `shepherd` binary: `shepherd up` runs the core; every other command is a client of
//! the running core (or, for `doctor`, an inspection of the installation). Parsing and
//! dispatch only; the commands live in [`cli`].

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::main(cli::Cli::parse())
}
