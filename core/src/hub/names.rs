//! Readable default names. A session that registers without a name (neither the user nor
//! Pi's session name gave one) is called after its repository and branch,
//! `webapp@fix-login`, or after its cwd's last component outside a repository; a second
//! live session with the same name gets `webapp@fix-login-2`, and so on. A name once given
//! stays across reconnects unless another live session holds it meanwhile. A name given
//! by the user always wins, even if another session has it.

use crate::git::RepoContext;

/// The longest name a session may have, in characters.
pub(super) const MAX_NAME: usize = 200;

/// How many characters of HEAD name a detached checkout.
const HEAD_CHARS: usize = 7;

/// The name an unnamed session in `cwd` is called after, before making it unique.
pub(super) fn base_name(cwd: &str, repo: &RepoContext) -> String {
    let project = repo.project.as_deref().filter(|_| repo.cwd == cwd);
    let name = match project {
        Some(project) => match (&repo.branch, &repo.head) {
            (Some(branch), _) => format!("{project}@{branch}"),
            (None, Some(head)) => {
                format!(
                    "{project}@{}",
                    head.chars().take(HEAD_CHARS).collect::<String>()
                )
            }
            (None, None) => project.to_string(),
        },
        None => cwd
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .filter(|last| !last.is_empty())
            .unwrap_or("/")
            .to_string(),
    };
    name.chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME - 4)
        .collect()
}

/// `base`, or `base-2`, `base-3`, … : the first one `taken` says is free.
pub(super) fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2u32..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| !taken(name))
        .expect("some suffix is free")
}

/// Whether `name` is one this rule would have made for `base`, so it may be made unique
/// again.
pub(super) fn is_derived(name: &str, base: &str) -> bool {
    if name == base {
        return true;
    }
    name.strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n >= 2)
}

/// Whether `name` is the 8-character id prefix earlier versions named sessions by (which
/// UUIDv7 makes the same for sessions started in the same minute).
pub(super) fn is_id_prefix(name: &str, session_id: &str) -> bool {
    name == session_id.chars().take(8).collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(cwd: &str, project: &str, branch: Option<&str>) -> RepoContext {
        RepoContext {
            cwd: cwd.into(),
            root: Some(cwd.into()),
            branch: branch.map(str::to_string),
            head: Some("0123456789abcdef".into()),
            worktree: false,
            project: Some(project.into()),
            repo_id: Some(format!("{cwd}/.git")),
        }
    }

    #[test]
    fn repository_and_branch_name_a_session() {
        let cwd = "/home/u/src/webapp-login";
        assert_eq!(
            base_name(cwd, &repo(cwd, "webapp", Some("fix-login"))),
            "webapp@fix-login"
        );
        assert_eq!(base_name(cwd, &repo(cwd, "webapp", None)), "webapp@0123456");
    }

    #[test]
    fn outside_a_repository_the_cwd_names_it() {
        let none = RepoContext::default();
        assert_eq!(base_name("/home/u/notes/", &none), "notes");
        assert_eq!(base_name("/", &none), "/");
        // A repository read for another directory is not used.
        let other = repo("/elsewhere", "webapp", Some("main"));
        assert_eq!(base_name("/home/u/notes", &other), "notes");
    }

    #[test]
    fn a_second_live_one_gets_a_number() {
        let live = ["webapp@fix-login", "webapp@fix-login-2"];
        assert_eq!(unique("webapp@main", |n| live.contains(&n)), "webapp@main");
        assert_eq!(
            unique("webapp@fix-login", |n| live.contains(&n)),
            "webapp@fix-login-3"
        );
    }

    #[test]
    fn derived_names_are_recognised() {
        assert!(is_id_prefix("0193ffee", "0193ffee-aaaa-7bbb"));
        assert!(!is_id_prefix("0193ffe", "0193ffee-aaaa-7bbb"));
        assert!(is_derived("webapp@main", "webapp@main"));
        assert!(is_derived("webapp@main-3", "webapp@main"));
        assert!(!is_derived("webapp@main-1", "webapp@main"));
        assert!(!is_derived("webapp@main-x", "webapp@main"));
        assert!(!is_derived("fix-login", "webapp@main"));
    }
}
