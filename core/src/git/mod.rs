//! # git
//!
//! Everything shepherd reads from or does to git repositories, with git2, always on a
//! blocking thread and never on the hub: today the repository context of a session's cwd
//! ([`repo`]); project work's worktrees and fast-forward integration belong here too.

pub mod repo;

pub use repo::{RepoContext, discover};
