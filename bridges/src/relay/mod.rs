//! # The relay: one bridge's state and behaviour, for any platform
//!
//! [`Relay<P>`] is a bridge's actor state: the sessions and pairings as the core last
//! told them, the link to the core, and the platform `P` ([`Platform`]: Telegram or
//! Matrix). It handles the core's events (asks become cards, answers close them, reports
//! and a pairing's news go to the session's place, renames reach the topic, a new session
//! gets its place at once, an ending is said once and leaves its cards without buttons
//! until the session returns; a role change renames the session's topic and is said in
//! it; a message along a supervisor or staff edge is said in the receiver's place),
//! resyncs after
//! a reconnect, and carries the human's commands, answers and steers back to the core,
//! the same way for every platform. A platform's own input (Telegram's updates, Matrix's
//! room events) is read in its own module, as `impl Relay<Telegram>` / `impl Relay<Matrix>`,
//! and ends in the calls here ([`Relay::on_command`], [`Relay::answer`],
//! [`Relay::steer`]).
//!
//! - [`platform`]: the trait a platform implements (place of a session, post, card).
//! - [`commands`]: answering chat commands from the core's state.
//! - [`pairings`]: who supervises whom, and where a command was written.
//! - [`typed`]: plain text in a session's place: an answer to its one open ask (with an
//!   undo), a question when there are several, else a steer.
//! - [`reports`]: reports and results, once per chat, and catching up after being away.
//! - [`files`]: photos, documents and voice notes sent to a session (its inbox, a steer).
//!
//! A linked host's link that drops, or comes back after a drop (`host_link`), is one line
//! in the chat's main place.
//!
//! Managed workers: `worker_changed` keeps what the relay knows of each worker (its label
//! for its question's card, which goes to its owner's place) and says a worker's ending
//! (`settling`/`done`: finished, `lost`) once in its owner's place; a reply to a
//! `/workers` line (about `#<id>`) steers that worker with `steer_agent`.
//!
//! Project work ([`projects`]): a Lead's `assignment_update` is said once, tagged
//! `app@feat/a`, in its repository's Manager topic or thread; an `assignment_changed`
//! that changes the state or the Lead's state is one short line there.

mod approvals;
pub mod commands;
pub mod files;
pub mod pairings;
pub mod platform;
pub mod projects;
pub mod reports;
pub mod typed;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use shepherd_core::protocol::{
    Ask, AskRef, AskState, ErrorCode, LeaveReason, Pairing, PairingChange, Peek, Report, Role,
    ServerMsg, SessionId, SessionInfo, SessionStatus, Verdict, Worker,
};

use crate::chat::commands::{self as chat_commands, ChatCommand};
use crate::chat::pairing;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::{already_answered_text, failure, plain, refused, steer_error};
use crate::chat::roles;
use crate::chat::session_news;
use crate::chat::workers::{self, Ending, WorkerRef, WorkersLine};
use crate::core_link::{CoreEvent, CoreLink};
use commands::CommandReply;
use pairings::{ActivePairings, Here};
pub use platform::Platform;
use shepherd_core::client::ClientError;

/// A bridge: its platform, its link to the core, and what it knows of the core's state.
pub struct Relay<P: Platform> {
    pub platform: P,
    pub core: CoreLink,
    pub sessions: HashMap<SessionId, SessionInfo>,
    /// Who supervises whom now: a supervisor's asks go to its worker's place.
    pub pairings: ActivePairings,
    /// Refused updates, one JSON line each.
    pub audit_log: PathBuf,
    /// The last report of each session this bridge saw, for `status` in its topic.
    pub last_reports: HashMap<SessionId, Report>,
    /// Open asks whose cards lost their buttons when their session left, by session: they
    /// get them back when it returns.
    pub waiting: HashMap<SessionId, Vec<Ask>>,
    /// The last report posted in this chat (reports are posted once).
    pub reports: reports::ReportCursor,
    /// The managed workers as the core last told them (labels for their asks' cards).
    pub workers: HashMap<WorkerRef, Worker>,
    /// The workers whose ending was said, and which ending: said once each.
    pub worker_endings: HashSet<(WorkerRef, Ending)>,
    /// The assignments as last told, and the updates said here.
    pub projects: projects::ProjectsSeen,
    /// `[phone]`: how large a file may be sent, how voice notes become text.
    pub phone: shepherd_core::config::PhoneConfig,
}

impl<P: Platform> Relay<P> {
    pub fn new(
        platform: P,
        core: CoreLink,
        audit_log: PathBuf,
        phone: shepherd_core::config::PhoneConfig,
    ) -> Relay<P> {
        Relay {
            platform,
            core,
            sessions: HashMap::new(),
            pairings: ActivePairings::default(),
            audit_log,
            last_reports: HashMap::new(),
            waiting: HashMap::new(),
            reports: reports::ReportCursor::default(),
            workers: HashMap::new(),
            worker_endings: HashSet::new(),
            projects: projects::ProjectsSeen::default(),
            phone,
        }
    }

    // ---- the core's side -----------------------------------------------------------

    pub async fn on_core(&mut self, event: CoreEvent) {
        match event {
            CoreEvent::Connected => {
                if let Err(e) = self.resync().await {
                    tracing::warn!(error = %e, "{}: resynchronising with the core failed", P::NAME);
                }
            }
            CoreEvent::Disconnected(why) => {
                tracing::warn!(%why, "{}: lost the core; reconnecting", P::NAME)
            }
            // The platform's loop stops the bridge on this before it gets here.
            CoreEvent::Refused(why) => {
                tracing::error!(%why, "{}: the core refused this bridge", P::NAME)
            }
            CoreEvent::Event(msg) => match *msg {
                ServerMsg::AskOpened { ask } => self.post_card(&ask).await,
                ServerMsg::AskAnswered { ask } => self.close_cards(&ask).await,
                ServerMsg::ReportPosted { report } => {
                    self.on_report(&report).await;
                    if report.announced {
                        self.last_reports.insert(report.session_id.clone(), report);
                    }
                }
                ServerMsg::SessionJoined { session } => {
                    let old = self.sessions.insert(session.id.clone(), session.clone());
                    self.platform.session_changed(old.as_ref(), &session).await;
                    self.joined(&session).await;
                }
                ServerMsg::SessionChanged { session } => {
                    let old = self.sessions.insert(session.id.clone(), session.clone());
                    self.platform.session_changed(old.as_ref(), &session).await;
                }
                ServerMsg::SessionLeft {
                    session,
                    reason,
                    last_status,
                } => {
                    self.sessions.insert(session.id.clone(), session.clone());
                    if let Some(reason) = reason {
                        self.ended(&session, reason, last_status.as_ref()).await;
                    }
                }
                ServerMsg::RoleChanged { session, previous } => {
                    self.role_changed(session, previous).await
                }
                ServerMsg::EdgeMessaged { message } => {
                    // Said in the receiver's place: a staff edge in the Lead's, a supervisor
                    // edge in the Manager's or Chief's.
                    let rendered = roles::edge_message(&message);
                    self.post_about(message.to_id.as_str(), rendered, "message")
                        .await;
                }
                ServerMsg::PairingEvent {
                    change,
                    pairing,
                    verdict,
                    by,
                } => self.on_pairing(change, pairing, verdict, by).await,
                ServerMsg::WorkerChanged { worker } => self.worker_changed(worker).await,
                ServerMsg::ApprovalChanged { approval } => self.approval_changed(approval).await,
                ServerMsg::HostLinkChanged { link } => {
                    let said = crate::chat::hosts::link_changed(&link);
                    self.say(None, said).await;
                }
                ServerMsg::AssignmentChanged { assignment } => {
                    self.assignment_changed(*assignment).await
                }
                ServerMsg::AssignmentUpdated {
                    assignment,
                    text,
                    message_id,
                } => self.assignment_update(*assignment, &text, message_id).await,
                _ => {}
            },
        }
    }

    /// After (re)connecting: learn the sessions, post cards for open asks that have none,
    /// close cards whose ask was answered while we were away, and post the reports and
    /// results announced meanwhile.
    async fn resync(&mut self) -> Result<(), ClientError> {
        let snapshot = self.core.snapshot().await?;
        let old = std::mem::replace(&mut self.sessions, snapshot.sessions);
        // A rename or role change missed while away renames the topic now.
        for session in self.sessions.values() {
            self.platform
                .session_changed(old.get(&session.id), session)
                .await;
        }
        self.pairings.reset(snapshot.pairings);
        // Labels for the cards below; endings are said from live events only.
        if let Ok(herd) = self.core.herd_workers(false).await {
            for w in herd.items {
                self.workers.insert(WorkerRef::of(&w), w);
            }
        }
        self.resync_projects().await;
        self.resync_approvals().await;
        self.resync_endings().await;
        for key in self.platform.open_cards() {
            let answered = match &key.host {
                None => snapshot.answered.get(&key).cloned(),
                // A linked host's ask open there now, or to ask that host about.
                Some(_) if snapshot.open.iter().any(|a| a.key() == key) => None,
                Some(_) => self
                    .core
                    .ask(&key)
                    .await
                    .filter(|a| a.state == AskState::Answered),
            };
            if let Some(ask) = answered {
                self.close_cards(&ask).await;
            }
        }
        for ask in &snapshot.open {
            if !self.platform.has_card(&ask.key()) {
                self.post_card(ask).await;
            }
        }
        self.catch_up().await?;
        // A linked host that cannot be asked now: its link announces what came meanwhile
        // when it is back.
        if let Err(e) = self.catch_up_hosts().await {
            tracing::warn!(error = %e, "{}: catching up with the linked hosts' reports", P::NAME);
        }
        Ok(())
    }

    /// Sessions whose place is open here but that are not connected now and whose process
    /// is gone (on this machine) ended while the core or this bridge was not running: say
    /// so once, and close their place. One whose process still runs is left to come back.
    async fn resync_endings(&mut self) {
        let open = self.platform.open_places();
        // A session's own open place; or a repository's (`per_project`) that it was put in
        // and whose ending was not said yet.
        let candidates: Vec<String> = self
            .sessions
            .keys()
            .filter(|id| {
                let key = self.platform.place_key_of(id);
                open.contains(&key)
                    && (key == id.as_str()
                        || self.platform.last_said(&ended_key(id)).as_deref() != Some(ENDED))
            })
            .map(ToString::to_string)
            .collect();
        for id in candidates {
            let Some(session) = self.sessions.get(id.as_str()).cloned() else {
                continue;
            };
            let gone = session
                .pid
                .is_none_or(|pid| !shepherd_core::workers::proc::process_alive(pid));
            let worker = self.owner_of(&session.id).is_some();
            if session.connected || session.host.is_some() || !gone || worker {
                continue;
            }
            let rendered = session_news::ended_while_away(&session);
            self.post_about(&session.id, rendered, "ending").await;
            self.platform.close_place(&session.id).await;
            self.platform.set_last_said(&ended_key(&session.id), ENDED);
        }
    }

    /// The place of `session`'s messages.
    /// A managed worker has no place of its own: its messages go to its owner's (up the
    /// chain of owners, for a worker's worker).
    async fn place_of(&mut self, session: &str) -> Option<P::Place> {
        let mut home = session.to_string();
        for _ in 0..8 {
            match self.owner_of(&home) {
                Some(owner) => home = owner,
                None => break,
            }
        }
        let info = self.sessions.get(home.as_str());
        self.platform.place_of(&home, info).await
    }

    /// The owner of `session` when it is one of this core's managed workers.
    fn owner_of(&self, session: &str) -> Option<String> {
        self.workers
            .values()
            .find(|w| w.host.is_none() && w.session_id == session)
            .map(|w| w.owner_id.to_string())
    }

    /// An open ask's card, in its session's place (its worker's, while it supervises one).
    async fn post_card(&mut self, ask: &Ask) {
        if self.platform.has_card(&ask.key()) {
            return; // Already shown (an event after a resync).
        }
        let card = render::ask_card_for(
            ask,
            self.sessions.get(&ask.session_id),
            self.worker_label(ask),
        );
        // A worker's question is for its owner: shown in the owner's place.
        let home = match ask.to.as_ref().filter(|t| t.worker.is_some()) {
            Some(to) => to
                .session_id
                .clone()
                .unwrap_or_else(|| ask.session_id.clone())
                .to_string(),
            None => self.pairings.home_of(&ask.session_id).to_string(),
        };
        let place = self.place_of(&home).await;
        self.platform.post_card(place, &home, ask, card).await;
    }

    /// Edit every card of an answered ask to show the answer and who gave it.
    async fn close_cards(&mut self, ask: &Ask) {
        let answered = render::answered_card_for(
            ask,
            self.sessions.get(&ask.session_id),
            self.worker_label(ask),
        );
        self.platform.close_cards(ask, answered).await;
    }

    /// The label of the worker whose question `ask` is, when the relay knows it.
    fn worker_label(&self, ask: &Ask) -> Option<&str> {
        let id = ask.to.as_ref()?.worker?;
        let key = WorkerRef {
            host: ask.host.clone(),
            id,
        };
        self.workers.get(&key).map(|w| w.label.as_str())
    }

    /// A managed worker changed: remember it; a finished or lost one is said once in its
    /// owner's place (with the start of its task; its result is mail for the owner).
    async fn worker_changed(&mut self, worker: Worker) {
        let ending = workers::Ending::of(worker.state);
        let key = WorkerRef::of(&worker);
        self.workers.insert(key.clone(), worker.clone());
        let Some(ending) = ending else {
            return;
        };
        if !self.worker_endings.insert((key, ending)) {
            return; // Said already (`done` after `settling`, an event seen again).
        }
        let rendered = workers::ended(&worker, ending);
        self.post_about(worker.owner_id.as_str(), rendered, "worker")
            .await;
    }

    /// A session registered on a new connection: it gets its topic or thread now (with a
    /// first message saying it started) unless it has one; cards that lost their buttons
    /// when it left get them back.
    async fn joined(&mut self, session: &SessionInfo) {
        let worker = self.owner_of(&session.id).is_some();
        // Its ending was said: now it is back (in a repository's place, which stayed open).
        let was_ended = self.platform.last_said(&ended_key(&session.id)).as_deref() == Some(ENDED);
        if was_ended {
            self.platform.set_last_said(&ended_key(&session.id), "back");
        }
        let shared = self.platform.place_key_of(&session.id) != session.id.as_str();
        if worker {
            // A worker's start and end are its owner's news (`worker_changed`).
        } else if !session.subagent && self.platform.needs_place(&session.id) {
            let rendered = session_news::started(session, P::PREFIX);
            self.post_about(&session.id, rendered, "start").await;
        } else if self.platform.reopen_place(&session.id).await || (was_ended && shared) {
            // It had ended: its place is open again, and says so.
            self.post_about(&session.id, session_news::back(session), "return")
                .await;
        }
        for ask in self.waiting.remove(&session.id).unwrap_or_default() {
            let card = render::ask_card_for(&ask, Some(session), self.worker_label(&ask));
            self.platform.mark_cards(&ask, card.rendered(), true).await;
        }
    }

    /// A session left for good (closed, or lost without a goodbye): say so once in its
    /// place, and mark its open asks' cards: the answer waits for its return.
    async fn ended(
        &mut self,
        session: &SessionInfo,
        reason: LeaveReason,
        last: Option<&SessionStatus>,
    ) {
        // A subagent never got a place of its own: none is made just to say it ended. A
        // worker's ending is said in its owner's place by `worker_changed`.
        let worker = self.owner_of(&session.id).is_some();
        let placeless = session.subagent && self.platform.needs_place(&session.id);
        if !(worker || placeless) {
            let rendered = session_news::ended(session, reason, last);
            self.post_about(&session.id, rendered, "ending").await;
            self.platform.close_place(&session.id).await;
            // Said: a repository's place stays open, so this is what keeps a restart from
            // saying it again (`resync_endings`).
            self.platform.set_last_said(&ended_key(&session.id), ENDED);
        }
        let asks = match self.core.asks(false).await {
            Ok(asks) => asks,
            Err(e) => {
                tracing::warn!(error = %e, "{}: could not list the open asks of a session that left", P::NAME);
                return;
            }
        };
        let mut waiting = Vec::new();
        for ask in asks.into_iter().filter(|a| a.session_id == session.id) {
            if !self.platform.has_card(&ask.key()) {
                continue;
            }
            let card = session_news::waiting_card(&ask, Some(session), reason);
            self.platform.mark_cards(&ask, card, false).await;
            waiting.push(ask);
        }
        if !waiting.is_empty() {
            self.waiting.insert(session.id.clone(), waiting);
        }
    }

    /// `status` in a session's topic or thread: the session as the core has it now, its
    /// open asks and the last report this bridge saw.
    /// A peek taken again for its refresh: `target` is `gpu:<id>` or `<id>`
    /// ([`crate::chat::peek::target`]); the peek, or the core's refusal in words.
    pub async fn refreshed_peek(&mut self, target: &str) -> Result<Peek, Rendered> {
        let (host, session) = shepherd_core::protocol::split_host(target);
        self.core.peek(session, host).await.map_err(refused)
    }

    async fn session_status(&mut self, session: &str) -> Rendered {
        let sessions = match self.core.sessions(true).await {
            Ok(sessions) => sessions,
            Err(e) => return failure(e),
        };
        let Some(info) = sessions.iter().find(|s| s.id == session) else {
            return plain(format!("The core no longer knows session {session}."));
        };
        let asks = self.core.asks(false).await.unwrap_or_default();
        let mine: Vec<&Ask> = asks.iter().filter(|a| a.session_id == info.id).collect();
        let now = shepherd_core::clock::now_ms();
        // What it runs now, and for how long.
        let peek = match info.connected {
            true => self
                .core
                .peek(info.id.as_str(), info.host.as_deref())
                .await
                .ok(),
            false => None,
        };
        let report = self.last_reports.get(&info.id);
        session_news::status_here(info, &mine, report, peek.as_ref(), now)
    }

    /// A session took or left a role: its topic is renamed after the role (Telegram; a
    /// Matrix thread keeps its root) and a short line says so in its place.
    async fn role_changed(&mut self, session: SessionInfo, previous: Role) {
        let old = self.sessions.insert(session.id.clone(), session.clone());
        self.platform.session_changed(old.as_ref(), &session).await;
        let rendered = roles::role_changed(&session, previous);
        self.post_about(&session.id, rendered, "role").await;
    }

    /// A pairing changed: remember who supervises whom, and post what the human wants to
    /// see in the worker's place.
    async fn on_pairing(
        &mut self,
        change: PairingChange,
        pairing: Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
    ) {
        self.pairings.apply(&pairing);
        let Some(rendered) = pairing::event(change, &pairing, verdict.as_ref(), by.as_deref())
        else {
            return;
        };
        self.post_about(&pairing.worker_id, rendered, "pairing")
            .await;
    }

    /// Post in `session`'s place, about it.
    async fn post_about(&mut self, session: &str, rendered: Rendered, what: &str) {
        let place = self.place_of(session).await;
        self.platform
            .post(place, rendered, Some(session), what)
            .await;
    }

    // ---- the human's side ----------------------------------------------------------

    /// Reply at `place` (where the human wrote).
    pub async fn say(&mut self, place: Option<P::Place>, rendered: Rendered) {
        self.platform.post(place, rendered, None, "reply").await;
    }

    /// A chat command written at `place` by `by`; `session` is the session it was written
    /// about (its topic's or thread's, or the message it replies to).
    pub async fn on_command(
        &mut self,
        command: ChatCommand,
        place: Option<P::Place>,
        session: Option<&str>,
        by: &str,
    ) {
        // A repository's place (`per_project`) is its one connected session's, if one.
        let resolved = session.and_then(|s| self.here_session(s).ok());
        let session = resolved.as_deref();
        let host = session
            .and_then(|s| self.sessions.get(s))
            .and_then(|s| s.host.as_deref());
        let here = Here { session, host, by };
        let now = shepherd_core::clock::now_ms();
        match commands::answer(&mut self.core, command, P::PREFIX, here, now).await {
            CommandReply::Say(reply) => self.say(place, reply).await,
            CommandReply::Steer { session, text } => self.steer(&session, &text, by, place).await,
            CommandReply::Answer { ask, text } => {
                // Typed as a command (not a reply to its card): said where it was typed.
                if let Some(answer) = self.reply_to_ask(&ask, &text, by, place.clone()).await {
                    let said = format!(
                        "✅ answered #{ask}: {}",
                        crate::chat::format::truncate(&answer, 300)
                    );
                    self.say(place, plain(said)).await;
                }
            }
            CommandReply::Staff { head, lines } => {
                self.platform.post_staff(place.clone(), head, lines).await;
            }
            CommandReply::Choices { head, projects } => {
                let choices = projects
                    .iter()
                    .map(|p| {
                        let target = format!("{}{p}", crate::chat::projects::NEW_TARGET);
                        (crate::chat::projects::project_choice(p), target)
                    })
                    .collect();
                self.platform
                    .post_choices(place.clone(), head, choices)
                    .await;
            }
            CommandReply::Workers { head, lines } => {
                self.say(place.clone(), head).await;
                for line in lines {
                    match line {
                        WorkersLine::Owner(r) => self.say(place.clone(), r).await,
                        WorkersLine::Worker(worker, r) => {
                            self.platform
                                .post_worker_line(place.clone(), r, &worker)
                                .await
                        }
                    }
                }
            }
            CommandReply::Peek(peek) => self.platform.post_peek(place, &peek).await,
            CommandReply::File { said, file } => {
                self.say(place.clone(), said).await;
                if let Some((name, bytes)) = file {
                    self.platform.post_file(place, name, bytes).await;
                }
            }
            CommandReply::SessionStatus(session) => {
                let reply = self.session_status(&session).await;
                self.say(place, reply).await;
            }
            CommandReply::Pairing {
                pairing,
                reply,
                announced,
            } => {
                self.pairings.apply(&pairing);
                // The worker's place gets the same from the core's pairing_event.
                if !(announced && self.platform.shows_in(&pairing.worker_id, place.as_ref())) {
                    self.say(place, reply).await;
                }
            }
        }
    }

    /// An ask, from the core (a linked host's, from that host's core through it).
    pub async fn ask(&mut self, ask: &AskRef) -> Option<Ask> {
        self.core.ask(ask).await
    }

    /// A reply to an ask: `2`, `#2`, `2️⃣` or an option's text picks that option;
    /// anything else is free text.
    /// Answer `ask` with `text` (an option's number picks that option); the answer given,
    /// or `None` when refused (said at `place`).
    pub async fn reply_to_ask(
        &mut self,
        ask: &AskRef,
        text: &str,
        by: &str,
        place: Option<P::Place>,
    ) -> Option<String> {
        let answer = match self.ask(ask).await {
            Some(ask) => {
                chat_commands::answer_text(&ask, text).unwrap_or_else(|| text.trim().to_string())
            }
            None => text.trim().to_string(),
        };
        self.answer(ask, &answer, by, place).await.then_some(answer)
    }

    /// Answer an ask; a refusal is said at `place`. True when the core took it.
    pub async fn answer(
        &mut self,
        ask: &AskRef,
        answer: &str,
        by: &str,
        place: Option<P::Place>,
    ) -> bool {
        match self.core.answer(ask, answer, by).await {
            Ok(()) => return true, // The card's edit (ask_answered) confirms it on the card.
            Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                self.say(place, plain(already_answered_text(&e))).await;
            }
            Err(e) => self.say(place, plain(format!("Not answered: {e}"))).await,
        }
        false
    }

    /// Steer a session with what the human wrote at `place`.
    pub async fn steer(&mut self, session: &str, text: &str, by: &str, place: Option<P::Place>) {
        // A `/new` choice answered with its task: start a session in that project.
        if let Some(project) = session.strip_prefix(crate::chat::projects::NEW_TARGET) {
            let said = self.new_in(project, text, by).await;
            self.say(place, said).await;
            return;
        }
        // A `/workers` line is about `#<id>`: its worker is steered as the human.
        if let Some(worker) = workers::worker_ref(session) {
            let host = worker.host.as_deref();
            let said = match self.core.steer_agent(&worker.agent(), host, text).await {
                Ok(worker) => workers::steered(&worker),
                Err(e) => plain(steer_error(&e)),
            };
            self.say(place, said).await;
            return;
        }
        let known = self.sessions.get(session).and_then(|s| s.host.as_deref());
        let (host, to) = on_host(session, known);
        let host = host.map(str::to_string);
        match self.core.steer(to, host.as_deref(), text, by).await {
            Ok(steered) => {
                let how = if steered.connected {
                    "delivered"
                } else {
                    "queued until it reconnects"
                };
                let r = plain(format!("➡️ steered {}: {how}", steered.session_name));
                self.platform.steered(place, &steered.session_id, r).await;
            }
            Err(e) => self.say(place, plain(steer_error(&e))).await,
        }
    }

    /// The session a place stands for: a session's own place is its id; a repository's
    /// (`per_project`: `project:app`) is its one connected session's. With none or several,
    /// what to tell the human instead.
    pub fn here_session(&self, key: &str) -> Result<String, Rendered> {
        let Some((host, project)) = crate::chat::places::project_of(key) else {
            return Ok(key.to_string());
        };
        let mut live: Vec<&SessionInfo> = self
            .sessions
            .values()
            .filter(|s| {
                s.connected
                    && s.project.as_deref() == Some(project)
                    && s.host.as_deref() == host
                    && self.owner_of(&s.id).is_none()
            })
            .collect();
        live.sort_by(|a, b| a.name.cmp(&b.name));
        match live.as_slice() {
            [one] => Ok(one.id.to_string()),
            [] => Err(plain(format!(
                "No session of {project} is connected here: {}new {project} <task> starts one.",
                P::PREFIX
            ))),
            several => {
                let names: Vec<&str> = several.iter().map(|s| s.name.as_str()).collect();
                Err(plain(format!(
                    "{} sessions work in {project} ({}): reply to one's message to reach it, or {}steer <session> <text>.",
                    several.len(),
                    names.join(", "),
                    P::PREFIX
                )))
            }
        }
    }

    /// Start a session in `project` (`gpu:app` on a linked host) on `text`: its task, after
    /// `--branch NAME` or `--agent DEF`, as `/new <project> <text>` does.
    async fn new_in(&mut self, project: &str, text: &str, by: &str) -> Rendered {
        const NO_TASK: &str =
            "Not started: write the task (after --branch NAME, for a new worktree).";
        let line = format!("/new {project} {}", text.trim());
        let Some(command) = chat_commands::parse(&line, '/', None) else {
            return plain(NO_TASK.to_string());
        };
        let here = Here {
            session: None,
            host: None,
            by,
        };
        let now = shepherd_core::clock::now_ms();
        match commands::answer(&mut self.core, command, P::PREFIX, here, now).await {
            CommandReply::Say(said) => said,
            _ => plain(NO_TASK.to_string()),
        }
    }

    /// Write a refused update to the audit log (one JSON line: `fields`, the time and
    /// the bridge).
    pub fn audit(&self, mut fields: serde_json::Value) {
        fields["time_ms"] = shepherd_core::clock::now_ms().into();
        fields["bridge"] = P::NAME.into();
        append_line(&self.audit_log, &fields.to_string());
    }
}

/// What the bridge remembers of whether a session's ending was said (`ENDED`).
fn ended_key(session: &str) -> String {
    format!("ended:{session}")
}

const ENDED: &str = "said";

/// Append one line to a file, best effort.
fn append_line(path: &Path, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// The linked host a session a human named is on, and its name there: `known`, the host
/// the relay knows the session by (a far session's place), else the one it is written
/// with (`gpu:train-7`), else none (this core's).
pub(super) fn on_host<'a>(session: &'a str, known: Option<&'a str>) -> (Option<&'a str>, &'a str) {
    match known {
        Some(host) => (Some(host), session),
        None => shepherd_core::protocol::split_host(session),
    }
}
