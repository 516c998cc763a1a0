//! A session's changes on the wire (`diff` → `diffed`): the stat and the whole patch from
//! where its branch left the primary branch to its working tree now
//! (`crate::git::diff`), for `shepherd diff` and a phone's `/diff`, which attaches the patch
//! as a `.diff` file.

use serde::{Deserialize, Serialize};

use super::SessionId;

/// What a session changed.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionDiff {
    pub session_id: SessionId,
    pub name: String,
    /// The linked host the session runs on; absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The work tree's root.
    pub root: String,
    /// The session's branch; absent on a detached HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What the changes are measured from: the primary checkout's branch (`main`), or
    /// `HEAD` for a session in the primary checkout (its uncommitted changes).
    pub base_name: String,
    /// The commit the patch applies to.
    pub base: String,
    pub files: u64,
    pub insertions: u64,
    pub deletions: u64,
    /// `git diff --stat`'s lines.
    pub stat: String,
    /// The unified diff (`git apply` takes it at `base` when `complete`).
    pub patch: String,
    /// False when the patch was cut to fit a message, or holds text that is not UTF-8
    /// (shown replaced): it does not apply then.
    pub complete: bool,
}
