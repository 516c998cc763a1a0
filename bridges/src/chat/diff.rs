//! # A diff on the phone
//!
//! `/diff` (Matrix `!diff`): what a session changed, as the core read it with git: a
//! message with the branch, what it is measured from and the `--stat` lines, and the
//! whole patch as a `.diff` file beside it ([`file_name`]), which `git apply` takes at
//! that base; a patch cut to fit says so. Pure.

use shepherd_core::protocol::SessionDiff;

use super::format::{plural, truncate};
use super::html::{Html, Rendered};

/// The stat lines shown in the message, at most.
const STAT_CHARS: usize = 3000;

/// The message about `d`; whether a file follows it is [`file_name`]'s to say.
pub fn summary(d: &SessionDiff) -> Rendered {
    let mut h = Html::new();
    let branch = d.branch.as_deref().unwrap_or("detached HEAD");
    let short = &d.base[..d.base.len().min(8)];
    let against = match d.base_name.as_str() {
        "HEAD" => format!("uncommitted, on {branch} at {short}"),
        base => format!("{branch} against {base} at {short}"),
    };
    h.text("🧾 ").bold(&d.name).text(&format!(" · {against}"));
    if d.files == 0 {
        h.line().italic("no changes");
        return h.into();
    }
    h.line().text(&format!(
        "{}, +{} −{}",
        plural(d.files, "file", "files"),
        d.insertions,
        d.deletions
    ));
    h.line().pre(&truncate(d.stat.trim_end(), STAT_CHARS), None);
    if !d.complete {
        h.line().italic(&format!(
            "The patch is cut short (too large for a message, or not UTF-8 text): it does not \
             apply; `git diff {}` in {} shows the tracked part.",
            d.base, d.root
        ));
    }
    h.into()
}

/// The patch's file name (`fix-login.diff`, from the branch when there is one:
/// `feat-login.diff`), or `None` when there is nothing to attach.
pub fn file_name(d: &SessionDiff) -> Option<String> {
    if d.files == 0 || d.patch.is_empty() {
        return None;
    }
    let stem: String = d
        .branch
        .as_deref()
        .unwrap_or(&d.name)
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    Some(format!("{}.diff", stem.trim_matches('-')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SessionDiff {
        SessionDiff {
            session_id: "s".into(),
            name: "fix-login".into(),
            host: None,
            root: "/src/app-feat".into(),
            branch: Some("feat/login".into()),
            base_name: "main".into(),
            base: "3f2a9c1d5e7b".into(),
            files: 2,
            insertions: 5,
            deletions: 1,
            stat:
                " a.rs | 4 +++-\n b.rs | 2 ++\n 2 files changed, 5 insertions(+), 1 deletion(-)\n"
                    .into(),
            patch: "diff --git a/a.rs b/a.rs\n".into(),
            complete: true,
        }
    }

    #[test]
    fn the_summary_names_the_branch_its_base_and_the_stat() {
        let r = summary(&sample());
        assert!(
            r.plain.starts_with(
                "🧾 fix-login · feat/login against main at 3f2a9c1d\n2 files, +5 −1\n a.rs | 4 +++-"
            ),
            "{}",
            r.plain
        );
        assert_eq!(file_name(&sample()).as_deref(), Some("feat-login.diff"));
        let mut cut = sample();
        cut.complete = false;
        assert!(summary(&cut).plain.contains("does not apply"));
        let mut none = sample();
        none.files = 0;
        none.base_name = "HEAD".into();
        assert!(
            summary(&none)
                .plain
                .ends_with("uncommitted, on feat/login at 3f2a9c1d\nno changes")
        );
        assert_eq!(file_name(&none), None);
    }
}
