//! Roles end to end with REAL Pi processes (the pinned Pi on Node 22, each loading the
//! shepherd extension and talking to its own scripted fake model), the real core and CLI,
//! in a temporary git repository with a commit and a linked worktree. One core serves all this
//! module's scenarios (one test); the Pi processes of independent scenarios run concurrently.
//!
//! (a) a Pi in the primary worktree takes `/manager` and is granted it; a Lead in the
//!     linked worktree calls `ask_supervisor`; the Manager's model receives the ask and
//!     calls `answer_staff`; the Lead's model receives the answer exactly once;
//! (b) `/manager` in the linked worktree is refused, and the refusal (naming the linked
//!     worktree) is shown to the user; the session stays a Lead;
//! (c) the tools the model is offered follow the role (a Lead never sees staff tools; a
//!     Manager has its role's tools and no writing tools) and `/manager leave` restores the
//!     exact list from before;
//! (d) the role is kept in the session: a Manager that crashed and lost its lease to another
//!     session meanwhile is refused when resumed, stays a Lead with its tools and is told by
//!     whom; a Manager resumed with its lease still held is the Manager again at once;
//! (e) the Chief, with two Leads in two repositories and no Manager, receives one Lead's
//!     `message_supervisor` and steers the other with `message_staff`; Leads are peers;
//! (f) the Manager is away when its Lead asks and the human answers from the CLI: the Lead
//!     gets that answer once; the Manager, back, is told by a notice and not asked again.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use shepherd_harness::Core;
use shepherd_harness::eventually;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::pi_process::{PiOptions, PiSession, user_messages_containing};

const LONG: Duration = Duration::from_secs(60);

const STAFF_TOOLS: [&str; 4] = [
    "list_staff",
    "inspect_staff",
    "message_staff",
    "answer_staff",
];
const LEAD_EDGE_TOOLS: [&str; 4] = [
    "message_supervisor",
    "ask_supervisor",
    "list_peers",
    "message_peer",
];
const WRITING_TOOLS: [&str; 3] = ["bash", "edit", "write"];

/// The tools offered, as a set (Pi orders a restored list its own way).
fn tool_set(req: &ModelRequest) -> Vec<String> {
    let mut names = req.tool_names();
    names.sort();
    names
}

fn offered(req: &ModelRequest, tool: &str) -> bool {
    req.tool_names().iter().any(|t| t == tool)
}

fn last_is_tool_result(req: &ModelRequest) -> bool {
    req.messages().last().is_some_and(|m| m["role"] == "tool")
}

/// The ask id in a delivery that says `answer_staff {ask: N, …`.
fn ask_id_in(text: &str) -> Option<u64> {
    let rest = &text[text.find("answer_staff {ask: ")? + "answer_staff {ask: ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A Pi in `cwd` with its own agent dir and model, connected to `core`.
async fn spawn_pi(
    core: &Core,
    model: &FakeModel,
    agent: &Path,
    cwd: &Path,
    name: &str,
) -> Result<PiSession> {
    spawn_pi_with(core, model, agent, cwd, name, &[]).await
}

/// As [`spawn_pi`], with more `pi` arguments (`--session <file>` resumes a session).
async fn spawn_pi_with(
    core: &Core,
    model: &FakeModel,
    agent: &Path,
    cwd: &Path,
    name: &str,
    args: &[&str],
) -> Result<PiSession> {
    let mut opts = PiOptions::new(agent);
    opts.args = args.iter().map(|a| a.to_string()).collect();
    opts.cwd = cwd.to_path_buf();
    opts.name = Some(name.into());
    opts.env.push((
        "SHEPHERD_SOCKET".into(),
        core.socket().display().to_string(),
    ));
    let pi = PiSession::spawn(model, opts).await?;
    core.connected_session(name, LONG).await?;
    Ok(pi)
}

/// Prompt `pi` and return the model request that carries `text`.
async fn prompt_seen(pi: &mut PiSession, model: &FakeModel, text: &str) -> Result<ModelRequest> {
    pi.prompt(text).await?;
    let req = eventually(LONG, &format!("a model request with {text:?}"), || {
        model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains(text))
    })
    .await?;
    pi.wait_settled(LONG).await?;
    Ok(req)
}

/// The notices the extension showed (`ctx.ui.notify` in RPC mode).
fn notices(pi: &PiSession) -> Vec<String> {
    pi.records()
        .into_iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .filter_map(|r| r["message"].as_str().map(str::to_string))
        .collect()
}

/// The newest footer text under `key` (`ctx.ui.setStatus`), None when cleared or never set.
fn footer(pi: &PiSession, key: &str) -> Option<String> {
    pi.records()
        .into_iter()
        .rev()
        .find(|r| {
            r["type"] == "extension_ui_request"
                && r["method"] == "setStatus"
                && r["statusKey"] == key
        })
        .and_then(|r| r["statusText"].as_str().map(str::to_string))
}

/// The role of the session named `name`, connected or not.
fn role_of(core: &Core, name: &str) -> Option<String> {
    core.cli_json(&["sessions", "--all"])
        .ok()?
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["role"].as_str().map(str::to_string))
}

async fn role_becomes(core: &Core, name: &str, role: &str) -> Result<Value> {
    eventually(LONG, &format!("{name} to be {role}"), || {
        core.session_named(name).filter(|s| s["role"] == role)
    })
    .await
}

/// (a) and (c): the Manager in the primary worktree answers the Lead's ask; its tools
/// follow the role and come back on leave.
async fn manager_answers_a_leads_ask(core: &Core, root: &Path) -> Result<()> {
    let (primary, linked) = repo_with_worktree(root, "app", "feature")?;
    let manager_model = FakeModel::start(|req| {
        if last_is_tool_result(req) {
            return Reply::text("Answered.");
        }
        let (_, last) = req.last();
        match ask_id_in(&last) {
            Some(ask) if offered(req, "answer_staff") => Reply::tool(
                "answer_staff",
                json!({"ask": ask, "answer": "ANSWER-rebase: rebase on main"}),
            ),
            _ => Reply::text("Nothing to do."),
        }
    })
    .await?;
    let lead_model = FakeModel::start(|req| {
        let (role, last) = req.last();
        if role == "tool" {
            Reply::text("Waiting.")
        } else if last.contains("ANSWER-rebase") {
            Reply::text("LEAD-GOT-ANSWER")
        } else if last.contains("ASK-SUP") {
            Reply::tool(
                "ask_supervisor",
                json!({"question": "Q-ROLES: rebase on main or merge?", "options": ["rebase", "merge"]}),
            )
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let (agent_mgr, agent_lead) = (root.join("agent-mgr"), root.join("agent-lead"));
    let (mut manager, mut lead) = tokio::try_join!(
        spawn_pi(core, &manager_model, &agent_mgr, &primary, "app-mgr"),
        spawn_pi(core, &lead_model, &agent_lead, &linked, "app-lead"),
    )?;

    // (c) As a Lead: the edge tools and the writing tools, never a staff tool.
    let before = prompt_seen(&mut manager, &manager_model, "TOOLS-as-lead").await?;
    for tool in LEAD_EDGE_TOOLS
        .iter()
        .chain(&WRITING_TOOLS)
        .chain(&["ask_human", "report", "read"])
    {
        assert!(offered(&before, tool), "{tool}: {:?}", before.tool_names());
    }
    for tool in STAFF_TOOLS {
        assert!(!offered(&before, tool), "{tool}: {:?}", before.tool_names());
    }

    // (a) /manager in the primary worktree is granted; the footer says so.
    manager.prompt("/manager").await?;
    let session = role_becomes(core, "app-mgr", "manager").await?;
    assert_eq!(session["project"], "app");
    eventually(LONG, "the manager footer", || {
        footer(&manager, "shepherd-role").filter(|t| t == "manager · app")
    })
    .await?;
    assert!(
        notices(&manager)
            .iter()
            .any(|n| n.contains("now the manager of app")),
        "{:?}",
        notices(&manager)
    );

    // (c) As the Manager: its role's tools and the read-only ones, no writing tools.
    let as_manager = prompt_seen(&mut manager, &manager_model, "TOOLS-as-manager").await?;
    for tool in STAFF_TOOLS
        .iter()
        .chain(&LEAD_EDGE_TOOLS)
        .chain(&["read", "grep", "find", "ls"])
    {
        assert!(
            offered(&as_manager, tool) || !offered(&before, tool),
            "{tool}: {:?}",
            as_manager.tool_names()
        );
    }
    for tool in STAFF_TOOLS.iter().chain(&["read"]) {
        assert!(
            offered(&as_manager, tool),
            "{tool}: {:?}",
            as_manager.tool_names()
        );
    }
    for tool in WRITING_TOOLS {
        assert!(
            !offered(&as_manager, tool),
            "{tool}: {:?}",
            as_manager.tool_names()
        );
    }

    // (b) runs concurrently in another repository; here the Lead asks its supervisor.
    let requests_before = manager_model.requests().len();
    lead.prompt("ASK-SUP: ask your supervisor how to integrate")
        .await?;
    lead.wait_settled(LONG).await?;
    let ask = eventually(LONG, "the ask addressed to the manager", || {
        let asks = core.cli_json(&["asks", "--all"]).ok()?;
        asks.as_array()?
            .iter()
            .find(|a| {
                a["question"]
                    .as_str()
                    .is_some_and(|q| q.contains("Q-ROLES"))
            })
            .cloned()
    })
    .await?;
    assert_eq!(ask["to"]["role"], "manager", "{ask}");
    assert_eq!(ask["to"]["project"], "app", "{ask}");

    // The Manager's model receives the ask as a turn of its own and answers it.
    let delivered = eventually(LONG, "the ask to reach the manager's model", || {
        manager_model.requests()[requests_before..]
            .iter()
            .find(|r| r.last().1.contains("Q-ROLES"))
            .cloned()
    })
    .await?;
    assert_eq!(ask_id_in(&delivered.last().1), ask["id"].as_u64());
    eventually(LONG, "the ask to be answered", || {
        core.cli_json(&["asks", "--all"])
            .ok()?
            .as_array()?
            .iter()
            .find(|a| a["id"] == ask["id"] && a["state"] == "answered")
            .cloned()
    })
    .await?;

    // The Lead's model receives the answer, once.
    let answered = eventually(LONG, "the answer to reach the lead's model", || {
        lead_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("ANSWER-rebase"))
    })
    .await?;
    assert!(
        answered.last().1.contains("Q-ROLES"),
        "{}",
        answered.last().1
    );
    lead.wait_settled(LONG).await?;
    manager.wait_settled(LONG).await?;
    // A later turn proves nothing more was on its way: the answer is in the session once.
    prompt_seen(&mut lead, &lead_model, "AFTER-answer").await?;
    let lead_file = lead.session_file().await?;
    assert_eq!(user_messages_containing(&lead_file, "ANSWER-rebase")?, 1);
    assert_eq!(
        lead_model
            .requests()
            .iter()
            .filter(|r| r.last().1.contains("ANSWER-rebase"))
            .count(),
        1
    );

    // (c) /manager leave: a Lead again, with exactly the tools it had before.
    manager.prompt("/manager leave").await?;
    role_becomes(core, "app-mgr", "lead").await?;
    let after = prompt_seen(&mut manager, &manager_model, "TOOLS-after-leave").await?;
    assert_eq!(tool_set(&after), tool_set(&before));
    eventually(LONG, "the manager footer cleared", || {
        footer(&manager, "shepherd-role").is_none().then_some(())
    })
    .await?;
    Ok(())
}

/// (b): `/manager` in a linked worktree is refused with the reason, and nothing changes.
async fn manager_refused_in_a_linked_worktree(core: &Core, root: &Path) -> Result<()> {
    let (_primary, linked) = repo_with_worktree(root, "lib", "feature")?;
    let model = FakeModel::start(|_| Reply::text("ok")).await?;
    let mut pi = spawn_pi(core, &model, &root.join("agent-wt"), &linked, "lib-wt").await?;
    let before = prompt_seen(&mut pi, &model, "TOOLS-before-refusal").await?;
    pi.prompt("/manager").await?;
    let refusal = eventually(LONG, "the refusal notice", || {
        notices(&pi)
            .into_iter()
            .find(|n| n.contains("linked worktree"))
    })
    .await?;
    assert!(refusal.contains("primary worktree"), "{refusal}");
    assert_eq!(role_of(core, "lib-wt").as_deref(), Some("lead"));
    let after = prompt_seen(&mut pi, &model, "TOOLS-after-refusal").await?;
    assert_eq!(tool_set(&after), tool_set(&before));
    for tool in STAFF_TOOLS {
        assert!(!offered(&after, tool), "{tool}: {:?}", after.tool_names());
    }
    assert!(footer(&pi, "shepherd-role").is_none());
    Ok(())
}

/// The newest `shepherd-role` entry's role in a session file.
fn role_entry(file: &Path) -> Result<Option<String>> {
    let text = std::fs::read_to_string(file)?;
    let mut role = None;
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line)?;
        if entry["type"] == "custom" && entry["customType"] == "shepherd-role" {
            role = entry["data"]["role"].as_str().map(str::to_string);
        }
    }
    Ok(role)
}

/// (d): the role is kept in the session. A Manager that crashed loses its lease to another
/// session; resumed, it claims the role again, is refused, stays a Lead with its tools and
/// is told by whom. The new Manager, resumed after a crash of its own, is the Manager again
/// with the role's tools at once.
async fn a_resumed_manager_claims_its_role_again(core: &Core, root: &Path) -> Result<()> {
    let (primary, _linked) = repo_with_worktree(root, "svc", "feature")?;
    let model_one = FakeModel::start(|_| Reply::text("ok")).await?;
    let model_two = FakeModel::start(|_| Reply::text("ok")).await?;
    let (agent_one, agent_two) = (root.join("agent-one"), root.join("agent-two"));
    let mut one = spawn_pi(core, &model_one, &agent_one, &primary, "svc-one").await?;
    let lead_tools = prompt_seen(&mut one, &model_one, "TOOLS-one-as-lead").await?;
    one.prompt("/manager").await?;
    role_becomes(core, "svc-one", "manager").await?;
    prompt_seen(&mut one, &model_one, "TOOLS-one-as-manager").await?;
    let file_one = one.session_file().await?;
    assert_eq!(role_entry(&file_one)?.as_deref(), Some("manager"));
    one.kill().await?;
    eventually(LONG, "svc-one to be away", || {
        core.cli_json(&["sessions", "--all"])
            .ok()?
            .as_array()?
            .iter()
            .find(|s| s["name"] == "svc-one" && s["connected"] == false)
            .cloned()
    })
    .await?;

    // Another session in the primary worktree takes the lease of the one that is away.
    let mut two = spawn_pi(core, &model_two, &agent_two, &primary, "svc-two").await?;
    prompt_seen(&mut two, &model_two, "TOOLS-two-as-lead").await?;
    two.prompt("/manager").await?;
    role_becomes(core, "svc-two", "manager").await?;
    assert_eq!(role_of(core, "svc-one").as_deref(), Some("lead"));

    // svc-one comes back (resumed): refused, told by whom, a Lead with its tools.
    let file_arg = file_one.display().to_string();
    let one = spawn_pi_with(
        core,
        &model_one,
        &agent_one,
        &primary,
        "svc-one",
        &["--session", &file_arg],
    )
    .await?;
    let mut one = one;
    let told = eventually(LONG, "svc-one told who holds the lease", || {
        notices(&one)
            .into_iter()
            .find(|n| n.contains("no longer the manager of svc"))
    })
    .await?;
    assert!(told.contains("svc-two"), "{told}");
    assert_eq!(role_of(core, "svc-one").as_deref(), Some("lead"));
    assert_eq!(role_of(core, "svc-two").as_deref(), Some("manager"));
    let back = prompt_seen(&mut one, &model_one, "TOOLS-one-resumed").await?;
    assert_eq!(tool_set(&back), tool_set(&lead_tools));
    assert_eq!(role_entry(&file_one)?.as_deref(), Some("lead"));

    // svc-two crashes and is resumed: still the Manager, with the role's tools at once.
    prompt_seen(&mut two, &model_two, "TOOLS-two-as-manager").await?;
    let file_two = two.session_file().await?;
    two.kill().await?;
    let file_arg = file_two.display().to_string();
    let mut two = spawn_pi_with(
        core,
        &model_two,
        &agent_two,
        &primary,
        "svc-two",
        &["--session", &file_arg],
    )
    .await?;
    let resumed = prompt_seen(&mut two, &model_two, "TOOLS-two-resumed").await?;
    assert!(
        offered(&resumed, "list_staff"),
        "{:?}",
        resumed.tool_names()
    );
    assert!(!offered(&resumed, "bash"), "{:?}", resumed.tool_names());
    assert_eq!(role_of(core, "svc-two").as_deref(), Some("manager"));
    eventually(LONG, "the resumed manager's footer", || {
        footer(&two, "shepherd-role").filter(|t| t == "manager · svc")
    })
    .await?;
    Ok(())
}

/// The exact id on the line of a staff or peer list that names `name`
/// (`- <id> · "<name>" · …`).
fn id_of(list: &str, name: &str) -> Option<String> {
    let line = list.lines().find(|l| l.contains(&format!("\"{name}\"")))?;
    let id = line.strip_prefix("- ")?.split(" · ").next()?;
    Some(id.to_string())
}

/// The text of the last tool result in a request, if it is the last message.
fn tool_result(req: &ModelRequest) -> Option<String> {
    let (role, text) = req.last();
    (role == "tool").then_some(text)
}

/// (e): the Chief, with two Leads in two repositories and no Manager, receives one Lead's
/// `message_supervisor`, finds the other with `list_staff` and steers it with
/// `message_staff`; a Lead reaches the other as a peer (`list_peers`, `message_peer`). The
/// Chief's model has the staff tools and neither the writing nor the supervisor tools.
async fn chief_hears_a_lead_and_steers_another(core: &Core, root: &Path) -> Result<()> {
    let (x, _) = repo_with_worktree(root, "xrepo", "feature")?;
    let (y, _) = repo_with_worktree(root, "yrepo", "feature")?;
    let hq = root.join("hq");
    std::fs::create_dir_all(&hq)?;
    let chief_model = FakeModel::start(|req| {
        if let Some(result) = tool_result(req) {
            return match id_of(&result, "y-lead") {
                Some(id) if result.starts_with("Your staff") => Reply::tool(
                    "message_staff",
                    json!({"session": id, "message": "STAFF-STEER: rebase yrepo on main"}),
                ),
                _ => Reply::text("Done."),
            };
        }
        if req.last().1.contains("CHIEF-PING") {
            Reply::tool("list_staff", json!({}))
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let x_model = FakeModel::start(|req| {
        if let Some(result) = tool_result(req) {
            return match id_of(&result, "y-lead") {
                Some(id) if result.starts_with("Your peers") => Reply::tool(
                    "message_peer",
                    json!({"session": id, "message": "PEER-NOTE: I touch the shared schema"}),
                ),
                _ => Reply::text("Sent."),
            };
        }
        let last = req.last().1;
        if last.contains("PING-CHIEF") {
            Reply::tool(
                "message_supervisor",
                json!({"message": "CHIEF-PING: xrepo is done"}),
            )
        } else if last.contains("PING-PEER") {
            Reply::tool("list_peers", json!({}))
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let y_model = FakeModel::start(|_| Reply::text("ok")).await?;
    let (agent_c, agent_x, agent_y) = (
        root.join("agent-chief"),
        root.join("agent-x"),
        root.join("agent-y"),
    );
    let (mut chief, mut x_lead, mut y_lead) = tokio::try_join!(
        spawn_pi(core, &chief_model, &agent_c, &hq, "hq-chief"),
        spawn_pi(core, &x_model, &agent_x, &x, "x-lead"),
        spawn_pi(core, &y_model, &agent_y, &y, "y-lead"),
    )?;
    chief.prompt("/chief").await?;
    role_becomes(core, "hq-chief", "chief").await?;
    eventually(LONG, "the chief footer", || {
        footer(&chief, "shepherd-role").filter(|t| t == "chief")
    })
    .await?;
    let tools = prompt_seen(&mut chief, &chief_model, "TOOLS-as-chief").await?;
    for tool in STAFF_TOOLS.iter().chain(&["ask_human", "report", "read"]) {
        assert!(offered(&tools, tool), "{tool}: {:?}", tools.tool_names());
    }
    for tool in LEAD_EDGE_TOOLS.iter().chain(&WRITING_TOOLS) {
        assert!(!offered(&tools, tool), "{tool}: {:?}", tools.tool_names());
    }

    // x-lead tells its supervisor (the Chief: no Manager in xrepo); the Chief steers y-lead.
    x_lead.prompt("PING-CHIEF: tell your supervisor").await?;
    let heard = eventually(LONG, "the chief's model to hear x-lead", || {
        chief_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("CHIEF-PING"))
    })
    .await?;
    assert!(
        heard
            .last()
            .1
            .contains("as their supervisor, from session \"x-lead\""),
        "{}",
        heard.last().1
    );
    let steered = eventually(LONG, "y-lead's model to get the steer", || {
        y_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("STAFF-STEER"))
    })
    .await?;
    assert!(
        steered
            .last()
            .1
            .contains("Steer from your supervisor, session \"hq-chief\""),
        "{}",
        steered.last().1
    );
    x_lead.wait_settled(LONG).await?;
    chief.wait_settled(LONG).await?;
    y_lead.wait_settled(LONG).await?;

    // Peers: x-lead finds y-lead with list_peers and messages it.
    x_lead.prompt("PING-PEER: warn your peer").await?;
    let noted = eventually(LONG, "y-lead's model to get the peer note", || {
        y_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("PEER-NOTE"))
    })
    .await?;
    assert!(
        noted
            .last()
            .1
            .contains("Peer message from session \"x-lead\""),
        "{}",
        noted.last().1
    );
    y_lead.wait_settled(LONG).await?;
    let y_file = y_lead.session_file().await?;
    assert_eq!(user_messages_containing(&y_file, "STAFF-STEER")?, 1);
    assert_eq!(user_messages_containing(&y_file, "PEER-NOTE")?, 1);

    chief.prompt("/chief leave").await?;
    role_becomes(core, "hq-chief", "lead").await?;
    Ok(())
}

/// (f): the Manager is away when its Lead asks; the human answers from the CLI. The Lead's
/// model gets that answer once; the Manager, back (resumed), is told it was answered and
/// is not asked again (the core withdrew the ask from its unread mail).
async fn the_human_answers_while_the_manager_is_away(core: &Core, root: &Path) -> Result<()> {
    let (primary, linked) = repo_with_worktree(root, "ops", "feature")?;
    let manager_model = FakeModel::start(|req| {
        if last_is_tool_result(req) {
            return Reply::text("Understood.");
        }
        match ask_id_in(&req.last().1) {
            Some(ask) if offered(req, "answer_staff") => Reply::tool(
                "answer_staff",
                json!({"ask": ask, "answer": "LATE-manager-answer"}),
            ),
            _ => Reply::text("ok"),
        }
    })
    .await?;
    let lead_model = FakeModel::start(|req| {
        let (role, last) = req.last();
        if role == "tool" {
            Reply::text("Waiting.")
        } else if last.contains("ASK-OPS") {
            Reply::tool(
                "ask_supervisor",
                json!({"question": "Q-OPS: deploy the canary?", "options": ["yes", "no"]}),
            )
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let (agent_m, agent_l) = (root.join("agent-ops-mgr"), root.join("agent-ops-lead"));
    let mut manager = spawn_pi(core, &manager_model, &agent_m, &primary, "ops-mgr").await?;
    prompt_seen(&mut manager, &manager_model, "TOOLS-ops-lead").await?;
    manager.prompt("/manager").await?;
    role_becomes(core, "ops-mgr", "manager").await?;
    prompt_seen(&mut manager, &manager_model, "TOOLS-ops-manager").await?;
    let manager_file = manager.session_file().await?;
    manager.kill().await?;

    let mut lead = spawn_pi(core, &lead_model, &agent_l, &linked, "ops-lead").await?;
    lead.prompt("ASK-OPS: ask your supervisor").await?;
    lead.wait_settled(LONG).await?;
    let ask = eventually(LONG, "the ask for the away manager", || {
        core.cli_json(&["asks"])
            .ok()?
            .as_array()?
            .iter()
            .find(|a| a["question"].as_str().is_some_and(|q| q.contains("Q-OPS")))
            .cloned()
    })
    .await?;
    assert_eq!(ask["to"]["role"], "manager", "{ask}");
    assert_eq!(ask["to"]["session_name"], "ops-mgr", "{ask}");
    let out = core.cli(&["answer", &ask["id"].to_string(), "PHONE-yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually(LONG, "the lead's model to get the human's answer", || {
        lead_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("PHONE-yes"))
    })
    .await?;
    lead.wait_settled(LONG).await?;

    // The Manager comes back: the answered ask was withdrawn from its mail, so no turn starts
    // for it; a notice (which starts no turn) tells it who answered, and it reads it with
    // its next prompt.
    let file_arg = manager_file.display().to_string();
    let before = manager_model.requests().len();
    let mut manager = spawn_pi_with(
        core,
        &manager_model,
        &agent_m,
        &primary,
        "ops-mgr",
        &["--session", &file_arg],
    )
    .await?;
    role_becomes(core, "ops-mgr", "manager").await?;
    let told = prompt_seen(&mut manager, &manager_model, "AFTER-ops-mgr").await?;
    let since: Vec<_> = manager_model.requests().into_iter().skip(before).collect();
    assert!(
        told.transcript().contains("[shepherd] Notice") && told.transcript().contains("PHONE-yes"),
        "{}",
        told.transcript()
    );
    assert!(
        since
            .iter()
            .all(|r| !r.transcript().contains("LATE-manager-answer")),
        "no turn answered the ask again"
    );
    drop(manager);
    prompt_seen(&mut lead, &lead_model, "AFTER-ops").await?;
    let lead_file = lead.session_file().await?;
    assert_eq!(user_messages_containing(&lead_file, "PHONE-yes")?, 1);
    assert_eq!(
        user_messages_containing(&lead_file, "LATE-manager-answer")?,
        0
    );
    Ok(())
}

#[tokio::test]
async fn roles_with_real_pi() -> Result<()> {
    let core = Core::start().await?;
    let root = tempfile::tempdir()?;
    let dir = |d: &str| root.path().join(d);
    let (dir_a, dir_b, dir_d, dir_e, dir_f) = (dir("a"), dir("b"), dir("d"), dir("e"), dir("f"));
    let (a, b, d, e, f) = tokio::join!(
        manager_answers_a_leads_ask(&core, &dir_a),
        manager_refused_in_a_linked_worktree(&core, &dir_b),
        a_resumed_manager_claims_its_role_again(&core, &dir_d),
        chief_hears_a_lead_and_steers_another(&core, &dir_e),
        the_human_answers_while_the_manager_is_away(&core, &dir_f),
    );
    let failed: Vec<String> = [
        ("(a)/(c)", a),
        ("(b)", b),
        ("(d)", d),
        ("(e)", e),
        ("(f)", f),
    ]
    .into_iter()
    .filter_map(|(what, r)| r.err().map(|e| format!("{what}: {e:#}")))
    .collect();
    if !failed.is_empty() {
        eprintln!("--- core log ---\n{}", core.log());
        bail!("{}", failed.join("\n"));
    }
    assert!(!core.log_has_panic(), "{}", core.log());
    Ok(())
}

/// Roles across machines: three cores ("home", "a", "b"), home linked to a and b through
/// `shepherd link`, real Pi sessions on each. The Manager of a repository on a reports to
/// the herd's Chief on home with `message_supervisor`; the Chief's model finds it with
/// `list_staff` (on host a) and steers it back with `message_staff`; a Lead on a messages a Lead on b with `message_peer`; home's
/// listing shows each session with its host. Each model sees each message once.
#[tokio::test]
async fn roles_across_linked_hosts_with_real_pi() -> Result<()> {
    let (a, b) = tokio::try_join!(Core::start(), Core::start())?;
    let (_config, config_path) = Core::hosts_config(&[("a", &a), ("b", &b)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let root = tempfile::tempdir()?;
    let dir = |d: &str| -> Result<std::path::PathBuf> {
        let p = root.path().join(d);
        std::fs::create_dir_all(&p)?;
        Ok(p)
    };
    let (primary, _) = repo_with_worktree(&dir("repos")?, "gpuapp", "feature")?;

    // The Chief finds the Manager on a in its staff (`list_staff` lists the linked hosts'
    // too) and steers it by its exact id.
    let chief_model = FakeModel::start(|req| {
        if let Some(result) = tool_result(req) {
            return match id_of(&result, "gpu-manager") {
                Some(id) if result.starts_with("Your staff") && result.contains("on host a") => {
                    Reply::tool(
                        "message_staff",
                        json!({"session": id, "message": "CHIEF-STEER: release gpuapp"}),
                    )
                }
                _ => Reply::text("Done."),
            };
        }
        if req.last().1.contains("MGR-REPORT") {
            Reply::tool("list_staff", json!({}))
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let manager_model = FakeModel::start(|req| {
        if tool_result(req).is_some() {
            return Reply::text("Sent.");
        }
        if req.last().1.contains("PING-CHIEF") {
            Reply::tool(
                "message_supervisor",
                json!({"message": "MGR-REPORT: the GPU run is green"}),
            )
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let lead_a_model = FakeModel::start(|req| {
        if tool_result(req).is_some() {
            return Reply::text("Sent.");
        }
        if req.last().1.contains("PING-PEER") {
            Reply::tool(
                "message_peer",
                json!({"session": "b:lead-b", "message": "PEER-NOTE: build with CUDA 12.4"}),
            )
        } else {
            Reply::text("ok")
        }
    })
    .await?;
    let lead_b_model = FakeModel::start(|_| Reply::text("ok")).await?;
    let (agent_c, hq) = (dir("agent-chief")?, dir("hq")?);
    let agent_m = dir("agent-mgr")?;
    let (agent_la, la) = (dir("agent-la")?, dir("la")?);
    let (agent_lb, lb) = (dir("agent-lb")?, dir("lb")?);
    let (mut chief, mut manager, mut lead_a, mut lead_b) = tokio::try_join!(
        spawn_pi(&home, &chief_model, &agent_c, &hq, "the-chief"),
        spawn_pi(&a, &manager_model, &agent_m, &primary, "gpu-manager"),
        spawn_pi(&a, &lead_a_model, &agent_la, &la, "lead-a"),
        spawn_pi(&b, &lead_b_model, &agent_lb, &lb, "lead-b"),
    )?;
    chief.prompt("/chief").await?;
    manager.prompt("/manager").await?;
    role_becomes(&home, "the-chief", "chief").await?;
    role_becomes(&a, "gpu-manager", "manager").await?;
    // Home lists the herd, each with its host.
    eventually(LONG, "home lists a's and b's sessions", || {
        let listed = home.cli_json(&["sessions"]).ok()?;
        let hosts: Vec<(String, String)> = listed
            .as_array()?
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap_or_default().to_string(),
                    s["host"].as_str().unwrap_or("home").to_string(),
                )
            })
            .collect();
        let want = [
            ("gpu-manager", "a"),
            ("lead-a", "a"),
            ("lead-b", "b"),
            ("the-chief", "home"),
        ];
        want.iter()
            .all(|(n, h)| hosts.contains(&(n.to_string(), h.to_string())))
            .then_some(())
    })
    .await?;
    // a knows the herd's Chief once the link told it (before, the Manager's message
    // would go to the human as a report).
    eventually(LONG, "the link to name the Chief to a", || {
        a.log()
            .lines()
            .any(|l| l.contains("named the herd's Chief") && l.contains("the-chief"))
            .then_some(())
    })
    .await?;

    manager.prompt("PING-CHIEF: tell the Chief").await?;
    let steered = eventually(LONG, "the Manager's model to get the Chief's steer", || {
        manager_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("CHIEF-STEER"))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}\n--- home ---\n{}\n--- a ---\n{}", home.log(), a.log()))?;
    assert!(
        steered.last().1.contains("the-chief"),
        "{}",
        steered.last().1
    );
    let heard = chief_model
        .requests()
        .into_iter()
        .find(|r| r.last().1.contains("MGR-REPORT"))
        .expect("the Chief heard the Manager before steering it");
    assert!(heard.last().1.contains("on a"), "{}", heard.last().1);

    lead_a.prompt("PING-PEER: warn lead-b").await?;
    eventually(LONG, "lead-b's model to get the peer note", || {
        lead_b_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("PEER-NOTE"))
    })
    .await?;
    for pi in [&mut chief, &mut manager, &mut lead_a, &mut lead_b] {
        pi.wait_settled(LONG).await?;
    }
    let manager_file = manager.session_file().await?;
    assert_eq!(user_messages_containing(&manager_file, "CHIEF-STEER")?, 1);
    let chief_file = chief.session_file().await?;
    assert_eq!(user_messages_containing(&chief_file, "MGR-REPORT")?, 1);
    let lead_b_file = lead_b.session_file().await?;
    assert_eq!(user_messages_containing(&lead_b_file, "PEER-NOTE")?, 1);
    for core in [&home, &a, &b] {
        assert!(!core.log_has_panic(), "{}", core.log());
    }
    Ok(())
}
