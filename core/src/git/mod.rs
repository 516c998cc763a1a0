//! # git
//!
//! Everything shepherd reads from or does to git repositories, with git2, always on a
//! blocking thread and never on the hub: the repository context of a session's cwd
//! ([`repo`]); project work's linked worktrees, made, reused, inventoried and removed
//! ([`worktrees`]); and fast-forward integration of an assigned branch into the primary
//! branch ([`integrate`]); a session's changes as one patch for the human ([`diff`]). These are plain synchronous functions: no hub, store or protocol
//! types.

pub mod diff;
pub mod integrate;
pub mod repo;
pub mod worktrees;

pub use integrate::{Plan, Recovered, Refusal, fast_forward, is_on_primary, plan, recover};
pub use repo::{RepoContext, discover};
pub use worktrees::{
    Checkout, Entry, Moved, Presence, RemoveError, Removed, WorktreeError, ahead_behind,
    checkout_dir, checkout_presence, checkout_presence_of, ensure_worktree, generate_branch, head,
    in_the_way, inventory, primary_root, remove_worktree,
};
