//! # Answering chat commands
//!
//! What a chat command means, the same on every platform: [`answer`] asks the core (through
//! [`CoreLink`]'s one method per request) and renders its reply with `chat::render`,
//! `chat::pairing`, `chat::session_news` and `chat::replies`. `stop` becomes an
//! `interrupt` request (the session's run is aborted, then steered with `then`), and the
//! pairing commands (`supervise`, `goal`, `look`, `unpair`) become `supervise`, `set_goal`,
//! `look` and `unpair` requests, all with the human as `by`; `status` written in a
//! session's topic shows that session (the relay adds what it knows) instead of the core.
//! Written in a session's topic or thread they may leave out the session
//! ([`SessionArgs::target`]); the core's refusals (`no_candidate`, `already_paired`,
//! `not_paired`, …) are shown in its own words, which say what to do. Nothing here knows
//! the platform: the relay posts the [`CommandReply`]. `staff` is `list_staff` as a
//! bridge (every connected session and lease holder), drawn as a tree; `workers` is
//! `list_workers` with each worker's `usage`, drawn as each owner's tree, and `close`
//! is `close_agent` (the worker named, or the one whose line the command replies to);
//! `projects` is `list_projects` as a bridge (every repository), one message; `peek`
//! is `peek` (posted with its refresh by the platform), `diff` the summary and the patch
//! as a file; `release`
//! is `release_role` with the human as `by`, answered with whose role it was.

use std::collections::HashMap;

use shepherd_core::protocol::{AskRef, Millis, Pairing, Peek, SessionId, Worker};

use super::pairings::Here;
use crate::chat::commands::{ChatCommand, SessionArgs, UsageError};
use crate::chat::hosts;
use crate::chat::pairing;
use crate::chat::projects;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::{failure, pick, plain, refused};
use crate::chat::roles;
use crate::chat::session_news;
use crate::chat::workers::{self, WorkerRef, WorkersLine};
use crate::core_link::{CoreLink, Reply};

/// One session's line of `/staff`.
pub struct StaffLine {
    pub session: SessionId,
    pub name: String,
    pub line: Rendered,
}

/// What to do about a chat command.
pub enum CommandReply {
    /// Say this where the command was written.
    Say(Rendered),
    /// Steer a session (the bridge confirms in its own way).
    Steer { session: String, text: String },
    /// Answer an ask, as a reply to its card does.
    Answer { ask: AskRef, text: String },
    /// `staff`: the tree's header, then one line per session with its name (the platform
    /// posts them as it steers: Telegram one message with a button each, Matrix a line
    /// each about its session, so that a reply to it steers that session).
    Staff {
        head: Rendered,
        lines: Vec<StaffLine>,
    },
    /// `new` without a project: the projects to choose from (a button each on Telegram, a
    /// line each on Matrix); choosing one asks for the task, as `new:<project>`.
    Choices {
        head: Rendered,
        projects: Vec<String>,
    },
    /// `workers`: the header, then each owner's heading and its workers' lines, each
    /// worker's posted about it (`#<id>`) so that a reply to it steers that worker.
    Workers {
        head: Rendered,
        lines: Vec<WorkersLine>,
    },
    /// `status` in a session's topic or thread: that session, with what the relay knows
    /// of it (its open asks, its last report).
    SessionStatus(String),
    /// `peek`: what a session is doing now, posted with a way to refresh it in place.
    Peek(Box<Peek>),
    /// `diff`: the summary, then (when there are changes) the patch as a file.
    File {
        said: Rendered,
        file: Option<(String, Vec<u8>)>,
    },
    /// A pairing command's result, `reply` to be said where the command was written.
    /// `announced`: the worker's topic or thread gets the same news from the core's
    /// `pairing_event`, so where that is also where the command was written, the bridge
    /// says it once.
    Pairing {
        pairing: Box<Pairing>,
        reply: Rendered,
        announced: bool,
    },
}

/// Answer a chat command from the core's state. `prefix` is the platform's command
/// character (`/` or `!`); `here` says where it was written and by whom; `now` is the
/// clock the lists and statuses show times against.
pub async fn answer(
    link: &mut CoreLink,
    command: ChatCommand,
    prefix: char,
    here: Here<'_>,
    now: Millis,
) -> CommandReply {
    let reply = match command {
        ChatCommand::Sessions => match link.sessions(false).await {
            Ok(mut sessions) => {
                // A managed worker is named as one: `scout-1 (worker of fix-login)`.
                if let Ok(herd) = link.herd_workers(false).await {
                    for s in &mut sessions {
                        if let Some(w) = herd
                            .items
                            .iter()
                            .find(|w| w.session_id == s.id && w.host == s.host)
                        {
                            s.name = format!("{} (worker of {})", w.label, w.owner_name);
                        }
                    }
                }
                render::sessions_list_at(&sessions, now)
            }
            Err(e) => failure(e),
        },
        ChatCommand::Asks => match link.asks(false).await {
            Ok(asks) => render::asks_list_at(&asks, now),
            Err(e) => failure(e),
        },
        ChatCommand::Staff => return staff(link, prefix).await,
        ChatCommand::Release { role, project } => {
            match link
                .release_role(roles::release_request(role, project, here.by))
                .await
            {
                Ok(lease) => roles::released(&lease),
                Err(e) => refused(e),
            }
        }
        ChatCommand::Workers => return workers_here(link, prefix, now).await,
        ChatCommand::Projects { all } => match link.projects(all).await {
            Ok(herd) => {
                let list = projects::projects_list(&herd.items, now, prefix);
                match hosts::left_out(&herd.missing) {
                    Some(note) => list.then(note),
                    None => list,
                }
            }
            Err(e) => failure(e),
        },
        ChatCommand::Hosts => match link.hosts().await {
            Ok(list) => hosts::hosts_list(&list, now),
            Err(e) => failure(e),
        },
        ChatCommand::Close(agent) => return close(link, agent, prefix, here).await,
        ChatCommand::New {
            project: None,
            branch: None,
            agent: None,
            task,
        } if task.is_empty() => return choose_project(link, prefix, here).await,
        ChatCommand::New {
            project,
            branch,
            agent,
            task,
        } => new_session(link, project, branch, agent, &task, here).await,
        ChatCommand::Continue(args) => return continue_session(link, &args, prefix, here).await,
        ChatCommand::Status(None) => match here.session {
            Some(session) => return CommandReply::SessionStatus(session.to_string()),
            None => match link.status().await {
                Ok(status) => render::core_status(&status),
                Err(e) => failure(e),
            },
        },
        ChatCommand::Status(Some(selector)) => match link.sessions(true).await {
            Ok(sessions) => match pick(&sessions, &selector, prefix) {
                Ok(s) => render::session_status_at(s, now),
                Err(text) => plain(text),
            },
            Err(e) => failure(e),
        },
        ChatCommand::Steer { session, text } => return CommandReply::Steer { session, text },
        ChatCommand::Answer { ask, text } => return CommandReply::Answer { ask, text },
        ChatCommand::Supervise(args) => return supervise(link, &args, prefix, here).await,
        ChatCommand::Goal(args) => return set_goal(link, &args, prefix, here).await,
        ChatCommand::Look(session) => return look(link, session.as_deref(), prefix, here).await,
        ChatCommand::Peek(session) => return peek(link, session.as_deref(), prefix, here).await,
        ChatCommand::Diff(session) => return diff(link, session.as_deref(), prefix, here).await,
        ChatCommand::Stop { session, then } => {
            return interrupt(link, session.as_deref(), then.as_deref(), prefix, here).await;
        }
        ChatCommand::Unpair(session) => {
            return unpair(link, session.as_deref(), prefix, here).await;
        }
        ChatCommand::Help => render::help(prefix),
        ChatCommand::Usage(error) => render::usage(prefix, &error),
        ChatCommand::Unknown(name) => render::unknown_command(prefix, &name),
    };
    CommandReply::Say(reply)
}

/// `workers`: every live worker of the herd (this core's and each connected linked
/// host's), as each owner's tree, with the hosts left out said last.
async fn workers_here(link: &mut CoreLink, prefix: char, now: Millis) -> CommandReply {
    let herd = match link.herd_workers(false).await {
        Ok(herd) => herd,
        Err(e) => return CommandReply::Say(failure(e)),
    };
    let usage = usage_of(link, &herd.items).await;
    let close = if prefix == '/' {
        "✖ close closes it".to_string()
    } else {
        format!("reply {prefix}close to it to close it")
    };
    let (head, mut lines) = workers::workers_list(&herd.items, &usage, now, prefix, &close);
    lines.extend(hosts::left_out(&herd.missing).map(WorkersLine::Owner));
    CommandReply::Workers { head, lines }
}

/// Each worker's own tokens and cost, where the core could count them (`usage` of its
/// session: the row of that session, without an error). A worker whose session file is
/// not written yet, or that cannot be read, is left out (it shows `—`).
async fn usage_of(
    link: &mut CoreLink,
    list: &[Worker],
) -> HashMap<WorkerRef, shepherd_core::protocol::UsageTotals> {
    let mut out = HashMap::new();
    for w in list {
        let Ok(report) = link.usage(w.session_id.as_str(), w.host.as_deref()).await else {
            continue;
        };
        if let Some(row) = report
            .sessions
            .iter()
            .find(|s| s.session_id == w.session_id && s.error.is_none())
        {
            out.insert(WorkerRef::of(w), row.usage);
        }
    }
    out
}

/// `supervise [session] [goal]`: pair a free supervisor with the session.
async fn supervise(
    link: &mut CoreLink,
    args: &SessionArgs,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let Some((worker, goal)) = target(link, args, here).await else {
        return usage(prefix, UsageError::SuperviseWithoutSession);
    };
    let goal = Some(goal).filter(|g| !g.is_empty());
    let (host, worker) = here.on_host(&worker);
    let reply = link.supervise(worker, host, goal.as_deref(), here.by).await;
    paired(reply, true, |p| pairing::started(p, Some(here.by)))
}

/// `goal [session] <goal>`: change the goal of the session's pairing.
async fn set_goal(
    link: &mut CoreLink,
    args: &SessionArgs,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let Some((session, goal)) = target(link, args, here).await else {
        return usage(prefix, UsageError::GoalWithoutText { session: None });
    };
    if goal.is_empty() {
        let session = Some(session);
        return usage(prefix, UsageError::GoalWithoutText { session });
    }
    let (host, session) = here.on_host(&session);
    let reply = link.set_goal(session, host, &goal, here.by).await;
    paired(reply, true, |p| pairing::goal_changed(p, Some(here.by)))
}

/// `look [session]`: deliver a view to the session's supervisor now.
async fn look(
    link: &mut CoreLink,
    session: Option<&str>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    match session_here(session, "look", prefix, here) {
        Ok(session) => {
            let (host, session) = here.on_host(session);
            paired(
                link.look(session, host, here.by).await,
                false,
                pairing::looking,
            )
        }
        Err(reply) => reply,
    }
}

/// `new <project> [--branch NAME] [--agent DEF] <task>`: start a session (`new` alone: the core's
/// refusal names the projects).
async fn new_session(
    link: &mut CoreLink,
    project: Option<String>,
    branch: Option<String>,
    agent: Option<String>,
    task: &str,
    here: Here<'_>,
) -> Rendered {
    let (host, project) = match project.as_deref().map(shepherd_core::protocol::split_host) {
        Some((host, project)) => (host, Some(project)),
        None => (None, None),
    };
    match link
        .new_session(
            project,
            host,
            branch.as_deref(),
            agent.as_deref(),
            task,
            here.by,
        )
        .await
    {
        Ok(s) => session_news::starting(&s, false),
        Err(e) => refused(e),
    }
}

/// `staff`: the tree, each line with its session's name (for Telegram's buttons).
async fn staff(link: &mut CoreLink, prefix: char) -> CommandReply {
    let members = match link.staff().await {
        Ok(members) => members,
        Err(e) => return CommandReply::Say(failure(e)),
    };
    let (head, lines) = roles::staff_tree(&members, prefix);
    let name = |id: &SessionId| {
        members
            .iter()
            .find(|m| m.session.id == *id)
            .map_or_else(|| id.to_string(), |m| m.session.name.clone())
    };
    let lines = lines
        .into_iter()
        .map(|(session, line)| StaffLine {
            name: name(&session),
            session,
            line,
        })
        .collect();
    CommandReply::Staff { head, lines }
}

/// `new` alone: the projects as choices, or what the core said (no project known yet).
async fn choose_project(link: &mut CoreLink, prefix: char, here: Here<'_>) -> CommandReply {
    let err = match link.new_session(None, None, None, None, "", here.by).await {
        Ok(s) => return CommandReply::Say(session_news::starting(&s, false)),
        Err(e) => e,
    };
    let projects: Vec<String> = match &err {
        shepherd_core::client::ClientError::Remote {
            details: Some(d), ..
        } => d["projects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    if projects.is_empty() {
        return CommandReply::Say(refused(err));
    }
    CommandReply::Choices {
        head: projects::choose_project(prefix),
        projects,
    }
}

/// `continue [session] [message]`: start an ended session again.
async fn continue_session(
    link: &mut CoreLink,
    args: &SessionArgs,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let Some((session, message)) = target(link, args, here).await else {
        return usage(prefix, UsageError::ContinueWithoutSession);
    };
    let (host, session) = here.on_host(&session);
    CommandReply::Say(
        match link
            .continue_session(session, host, &message, here.by)
            .await
        {
            Ok(s) => session_news::starting(&s, true),
            Err(e) => refused(e),
        },
    )
}

/// `close [worker|session]`: the worker named (or whose line the command replies to);
/// else a session `new` or `continue` started (named, or the topic's).
async fn close(
    link: &mut CoreLink,
    agent: Option<String>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let Some(agent) = agent.or(here.session.map(str::to_string)) else {
        return usage(prefix, UsageError::CloseWithoutWorker);
    };
    // `gpu#5` or `gpu:scout-1`: a linked host's worker, named as its core names it.
    let (host, name) = match workers::worker_ref(&agent) {
        Some(w) => (w.host.clone(), w.agent()),
        None => {
            let (host, label) = shepherd_core::protocol::split_host(&agent);
            (host.map(str::to_string), label.to_string())
        }
    };
    let reply = match link.close_agent(&name, host.as_deref()).await {
        Ok(worker) => workers::closed(&worker),
        // No such worker: a session the human started, perhaps.
        Err(e) if e.reason() == Some("agent_not_found") => {
            match link.close_session(&name, host.as_deref(), here.by).await {
                Ok(s) => session_news::closed_started(&s),
                Err(e) => refused(e),
            }
        }
        Err(e) => refused(e),
    };
    CommandReply::Say(reply)
}

/// `peek [session]`: what the session is doing now.
async fn peek(
    link: &mut CoreLink,
    session: Option<&str>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let session = match session_here(session, "peek", prefix, here) {
        Ok(session) => session,
        Err(reply) => return reply,
    };
    let (host, session) = here.on_host(session);
    match link.peek(session, host).await {
        Ok(peek) => CommandReply::Peek(Box::new(peek)),
        Err(e) => CommandReply::Say(refused(e)),
    }
}

/// `diff [session]`: what the session changed, the patch as a file.
async fn diff(
    link: &mut CoreLink,
    session: Option<&str>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let session = match session_here(session, "diff", prefix, here) {
        Ok(session) => session,
        Err(reply) => return reply,
    };
    let (host, session) = here.on_host(session);
    match link.diff(session, host).await {
        Ok(d) => CommandReply::File {
            said: crate::chat::diff::summary(&d),
            file: crate::chat::diff::file_name(&d).map(|name| (name, d.patch.into_bytes())),
        },
        Err(e) => CommandReply::Say(refused(e)),
    }
}

/// `stop [session] [then <text>]`: interrupt the session's current run, then steer it.
async fn interrupt(
    link: &mut CoreLink,
    session: Option<&str>,
    then: Option<&str>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    let session = match session_here(session, "stop", prefix, here) {
        Ok(session) => session,
        Err(reply) => return reply,
    };
    let (host, session) = here.on_host(session);
    let reply = match link.interrupt(session, host, then, here.by).await {
        Ok(interrupted) => session_news::interrupted(&interrupted, then.is_some()),
        Err(e) => refused(e),
    };
    CommandReply::Say(reply)
}

/// `unpair [session]` (and `supervise stop`): end the session's pairing.
async fn unpair(
    link: &mut CoreLink,
    session: Option<&str>,
    prefix: char,
    here: Here<'_>,
) -> CommandReply {
    match session_here(session, "unpair", prefix, here) {
        Ok(session) => {
            let (host, session) = here.on_host(session);
            let reply = link.unpair(session, host, here.by).await;
            paired(reply, true, |p| pairing::stopped(p, Some(here.by)))
        }
        Err(reply) => reply,
    }
}

/// The session a command names, else the one it was written about, else its usage.
fn session_here<'a>(
    session: Option<&'a str>,
    command: &'static str,
    prefix: char,
    here: Here<'a>,
) -> Result<&'a str, CommandReply> {
    session
        .or(here.session)
        .ok_or_else(|| usage(prefix, UsageError::WithoutSession { command }))
}

/// A pairing command's result, `render`ed to be said where the command was written.
/// `announced`: the core also announces it in the worker's place (`pairing_event`).
fn paired(
    reply: Reply<Pairing>,
    announced: bool,
    render: impl FnOnce(&Pairing) -> Rendered,
) -> CommandReply {
    match reply {
        Ok(pairing) => CommandReply::Pairing {
            reply: render(&pairing),
            pairing: Box::new(pairing),
            announced,
        },
        Err(e) => CommandReply::Say(refused(e)),
    }
}

/// The session and text of `args` where the command was written. In a session's topic,
/// whether the first word is a session is asked of the core (an exact id or name among
/// every known session).
async fn target(
    link: &mut CoreLink,
    args: &SessionArgs,
    here: Here<'_>,
) -> Option<(String, String)> {
    let named = if here.session.is_some() && !args.first.is_empty() && !args.quoted {
        match link.sessions(true).await {
            Ok(sessions) => sessions
                .iter()
                .any(|s| s.id == args.first || s.name == args.first),
            Err(_) => false,
        }
    } else {
        false
    };
    args.target(here.session, |_| named)
}

fn usage(prefix: char, error: UsageError) -> CommandReply {
    CommandReply::Say(render::usage(prefix, &error))
}
