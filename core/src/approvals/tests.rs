//! The policy's rulings: order, presets, defaults, `outside`, and a project's tightening.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::config::approvals::ApprovalsConfig;

fn config(text: &str) -> ApprovalsConfig {
    toml::from_str(text).expect("a valid [approvals]")
}

fn user(text: &str) -> Policy {
    Policy {
        user: std::sync::Arc::new(Layer::user(&config(text), "config.toml")),
        project: None,
    }
}

fn bash<'a>(input: &'a serde_json::Value, cwd: &'a Path) -> Call<'a> {
    Call {
        tool: "bash",
        input,
        cwd,
        worktree: None,
    }
}

#[test]
fn the_first_matching_rule_decides_then_the_preset_then_the_default() {
    let policy = user(
        r#"
        preset = "careful"
        default = "allow"
        [[rules]]
        tool = "bash"
        match = "git push origin main"
        decision = "deny"
        [[rules]]
        tool = "bash"
        regex = "^git push"
        decision = "allow"
        "#,
    );
    let cwd = Path::new("/src/app");
    let decide = |cmd: &str| policy.decide(&bash(&json!({ "command": cmd }), cwd));
    let main = decide("git push origin main");
    assert_eq!(main.decision, Decision::Deny);
    assert_eq!(
        main.source.to_string(),
        "rule 1 of config.toml (tool bash, match \"git push origin main\", deny)"
    );
    // The user's own allow comes before the preset's ask.
    assert_eq!(decide("git push origin feat").decision, Decision::Allow);
    let rm = decide("rm -rf target");
    assert_eq!(rm.decision, Decision::Ask);
    assert!(
        rm.source
            .to_string()
            .starts_with("rule 3 of the careful preset in config.toml"),
        "{}",
        rm.source
    );
    let ls = decide("ls");
    assert_eq!(
        (ls.decision, ls.source.to_string()),
        (
            Decision::Allow,
            "no rule matches: the default of config.toml".to_string()
        )
    );
    // Nothing set: every call is allowed, by the default.
    let none = user("");
    assert_eq!(
        none.decide(&bash(&json!({ "command": "rm -rf /" }), cwd))
            .decision,
        Decision::Allow
    );
}

#[test]
fn a_rule_is_about_its_tools_and_other_tools_are_matched_on_their_arguments() {
    let policy = user(
        r#"
        [[rules]]
        tool = ["write", "edit"]
        match = "**/.env"
        decision = "deny"
        [[rules]]
        tool = "*"
        regex = "\"url\":\"https://prod"
        decision = "ask"
        "#,
    );
    let cwd = Path::new("/src/app");
    let env = json!({ "path": "config/.env", "content": "x" });
    let call = |tool, input| Call {
        tool,
        input,
        cwd,
        worktree: None,
    };
    assert_eq!(policy.decide(&call("write", &env)).decision, Decision::Deny);
    assert_eq!(policy.decide(&call("edit", &env)).decision, Decision::Deny);
    // `read` is not covered by the first rule.
    assert_eq!(policy.decide(&call("read", &env)).decision, Decision::Allow);
    let fetch = json!({ "url": "https://prod.example/api" });
    assert_eq!(
        policy.decide(&call("fetch", &fetch)).decision,
        Decision::Ask
    );
    // A relative path is made absolute against the session's directory, `..` taken away.
    let up = json!({ "path": "../app/./x/../.env" });
    assert_eq!(call("write", &up).subject(), "/src/app/.env");
}

#[test]
fn outside_cwd_is_outside_the_directory_and_the_worktree_with_symlinks_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let cwd = root.join("sub");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cwd.join("link")).unwrap();
    let policy = user("preset = \"careful\"");
    let write = |path: &str| {
        let input = json!({ "path": path, "content": "x" });
        let call = Call {
            tool: "write",
            input: &input,
            cwd: &cwd,
            worktree: Some(&root),
        };
        policy.decide(&call).decision
    };
    assert_eq!(
        write("new/file.txt"),
        Decision::Allow,
        "inside the directory"
    );
    assert_eq!(write("../README"), Decision::Allow, "inside the worktree");
    assert_eq!(write("../../elsewhere/x"), Decision::Ask, "outside both");
    assert_eq!(write("/etc/hosts"), Decision::Ask);
    assert_eq!(
        write("link/x"),
        Decision::Ask,
        "a symlink out of the directory"
    );
    // `bash` is not a written path: `outside` never matches it.
    let input = json!({ "command": "echo hi > /etc/motd" });
    assert_eq!(policy.decide(&bash(&input, &cwd)).decision, Decision::Allow);
}

fn project(text: &str) -> (tempfile::TempDir, ProjectPolicy) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".pi")).unwrap();
    std::fs::write(dir.path().join(PROJECT_FILE), text).unwrap();
    let p = project_policy(dir.path());
    (dir, p)
}

#[test]
fn a_project_tightens_and_the_stricter_ruling_wins() {
    let (dir, p) = project(
        r#"
        [approvals]
        [[approvals.rules]]
        tool = "bash"
        match = "terraform apply*"
        decision = "deny"
        [[approvals.rules]]
        tool = "bash"
        match = "git push*"
        decision = "ask"
        "#,
    );
    let ProjectPolicy::Layer(layer) = p else {
        panic!("a tightening project file is taken: {p:?}");
    };
    let policy = Policy {
        user: std::sync::Arc::new(Layer::user(
            &config("[[rules]]\ntool = \"bash\"\nmatch = \"git push*\"\ndecision = \"deny\""),
            "config.toml",
        )),
        project: Some(layer),
    };
    let cwd = dir.path();
    let decide = |cmd: &str| policy.decide(&bash(&json!({ "command": cmd }), cwd));
    let apply = decide("terraform apply -auto-approve");
    assert_eq!(apply.decision, Decision::Deny);
    assert!(
        apply.source.to_string().contains(PROJECT_FILE),
        "{}",
        apply.source
    );
    // The user's deny is stricter than the project's ask.
    let push = decide("git push");
    assert_eq!(push.decision, Decision::Deny);
    assert!(
        push.source.to_string().contains("config.toml"),
        "{}",
        push.source
    );
    assert_eq!(decide("ls").decision, Decision::Allow);
}

#[test]
fn a_project_file_that_would_loosen_is_refused_naming_the_file_and_rule() {
    let refused = |text: &str| match project(text).1 {
        ProjectPolicy::Refused(why) => why,
        other => panic!("{text} was taken: {other:?}"),
    };
    let allow = refused(
        "[[approvals.rules]]\ntool = \"bash\"\nmatch = \"x\"\ndecision = \"ask\"\n[[approvals.rules]]\ntool = \"bash\"\nmatch = \"git push*\"\ndecision = \"allow\"",
    );
    assert!(
        allow.contains(PROJECT_FILE)
            && allow.contains("rule 2 (tool bash, match \"git push*\", allow) would loosen"),
        "{allow}"
    );
    let default = refused("[approvals]\ndefault = \"allow\"");
    assert!(
        default.contains("default = \"allow\"") && default.contains("loosen"),
        "{default}"
    );
    let unreachable = refused("[approvals]\nwhen_unreachable = \"allow\"");
    assert!(
        unreachable.contains("approvals.when_unreachable") && unreachable.contains("yours to set"),
        "{unreachable}"
    );
    let malformed =
        refused("[[approvals.rules]]\ntool = \"bash\"\nregex = \"(\"\ndecision = \"ask\"");
    assert!(
        malformed.contains("approvals.rules[0]") && malformed.contains("not a regular expression"),
        "{malformed}"
    );
    let syntax = refused("[approvals");
    assert!(syntax.contains("not valid TOML"), "{syntax}");
    // Nothing there, or nothing about approvals: no project policy.
    assert!(matches!(project("").1, ProjectPolicy::None));
    let none = tempfile::tempdir().unwrap();
    assert!(matches!(project_policy(none.path()), ProjectPolicy::None));
}

#[test]
fn a_project_file_that_is_not_a_small_regular_file_is_left_unread() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".pi")).unwrap();
    let file = dir.path().join(PROJECT_FILE);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &file,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    match project_policy(dir.path()) {
        ProjectPolicy::Refused(why) => assert!(why.contains("a FIFO"), "{why}"),
        other => panic!("a FIFO was read: {other:?}"),
    }
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, "#".repeat(MAX_PROJECT_FILE as usize + 1)).unwrap();
    match project_policy(dir.path()) {
        ProjectPolicy::Refused(why) => assert!(why.contains("left unread"), "{why}"),
        other => panic!("a huge file was read: {other:?}"),
    }
}
