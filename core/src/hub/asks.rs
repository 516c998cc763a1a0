//! Asks: a session's questions for whoever supervises it and the one answer each gets
//! (reports, information posted without a question, are kept in `reports.rs`). The
//! winning answer travels back to the asking session through its mailbox, like any other
//! delivery.

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::{
    AskId, AskState, AskTo, ClientKind, DeliveryKind, ErrorCode, Role, Sender, ServerMsg,
    SessionId, SessionInfo, requests,
};
use crate::store::{self, messages::NewMessage};

const MAX_OPTIONS: usize = 10;
const MAX_OPTION_CHARS: usize = 100;

fn invalid(message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::InvalidArgument, message)
}

/// The label recorded as the human who acted: `cli`, or what the bridge says.
pub(super) fn human_label(kind: ClientKind, client_name: &str, by: Option<String>) -> String {
    match kind {
        ClientKind::Bridge => by
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| client_name.to_string()),
        // A home core passes on who answered (a bridge's human, the herd's Chief).
        ClientKind::Core => by
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| "cli".to_string()),
        _ => "cli".to_string(),
    }
}

/// Whom an `ask_supervisor` ask is delivered to.
enum Addressee {
    /// The holder of the role above the asker, here.
    Here(Box<SessionInfo>),
    /// The herd's Chief on the home core (this core is a linked host).
    HerdChief,
    /// Nobody: the human, or a role's mailbox.
    Nobody,
}

/// A question is not empty; at most [`MAX_OPTIONS`] options of 1 to
/// [`MAX_OPTION_CHARS`] characters each.
fn check_question(question: &str, options: &[String]) -> HubResult<()> {
    if question.trim().is_empty() {
        return Err(invalid("question must not be empty"));
    }
    if options.len() > MAX_OPTIONS {
        return Err(invalid(format!(
            "at most {MAX_OPTIONS} options, got {}",
            options.len()
        )));
    }
    if let Some(bad) = options
        .iter()
        .find(|o| o.trim().is_empty() || o.chars().count() > MAX_OPTION_CHARS)
    {
        return Err(invalid(format!(
            "each option must be 1-{MAX_OPTION_CHARS} characters, got {bad:?}"
        )));
    }
    Ok(())
}

impl State {
    /// The label of the human acting on connection `conn` (`cli`, or the bridge's `by`).
    pub(super) fn human_label(
        &self,
        conn: super::ConnId,
        kind: ClientKind,
        by: Option<String>,
    ) -> String {
        let client_name = self
            .presence
            .conn(&conn)
            .map(|c| c.handle.client_name.clone())
            .unwrap_or_default();
        human_label(kind, &client_name, by)
    }

    /// The human on connection `conn` as the sender of mail.
    pub(super) fn human_sender(
        &self,
        conn: super::ConnId,
        kind: ClientKind,
        by: Option<String>,
    ) -> Sender {
        Sender {
            kind,
            session_id: None,
            name: self.human_label(conn, kind, by),
        }
    }

    pub(super) fn ask(
        &mut self,
        cx: Cx,
        req: requests::Ask,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.open_ask(cx, req, false, db, out)
    }

    /// `ask_supervisor`: an ask addressed to whom the session reports (the human when
    /// nobody holds a role above it), delivered to that session to answer.
    pub(super) fn ask_supervisor(
        &mut self,
        cx: Cx,
        req: requests::AskSupervisor,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        // The same fields as `ask`, addressed.
        let requests::AskSupervisor {
            id,
            question,
            options,
            details,
            key,
        } = req;
        let req = requests::Ask {
            id,
            question,
            options,
            details,
            key,
        };
        self.open_ask(cx, req, true, db, out)
    }

    /// Store and announce an ask; `to_supervisor`: address it to the session's effective
    /// supervisor and deliver it there.
    fn open_ask(
        &mut self,
        cx: Cx,
        req: requests::Ask,
        to_supervisor: bool,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, id, .. } = cx;
        let requests::Ask {
            question,
            options,
            details,
            key,
            ..
        } = req;
        let session_id = self.presence.registered(conn)?.clone();
        super::keys::check_key(key.as_deref())?;
        // Sent again (a queued ask resent after a lost reply): the ask made then.
        if let Some(key) = &key
            && let Some(ask) = store::asks::by_key(db, &session_id, key)?
        {
            tracing::info!(ask = %ask.id, session = %session_id, "ask sent again with its key; not repeated");
            out.send(conn, &ServerMsg::Asked { id, ask });
            return Ok(());
        }
        check_question(&question, &options)?;
        let max = self.facts.limits.max_open_asks_per_session;
        if store::asks::open_count(db, &session_id)? as usize >= max {
            return Err(HubError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "this session already has {max} open asks, the most allowed (core.limits.max_open_asks_per_session); wait for answers"
                ),
            )
            .with_details(serde_json::json!({ "limit": "max_open_asks_per_session", "max": max })));
        }
        let ask = atomically(db, || {
            let ask_id = store::asks::insert(
                db,
                &session_id,
                &question,
                &options,
                details.as_deref(),
                key.as_deref(),
                now_ms(),
            )?;
            let deliver_to = match to_supervisor {
                true => self.address_to_supervisor(ask_id, &session_id, db)?,
                false => Addressee::Nobody,
            };
            let ask = store::asks::get(db, ask_id)?.expect("just inserted");
            // Measured as its largest frame (`asked` with the largest id) before anyone
            // hears of it.
            let probe = ServerMsg::Asked {
                id: u64::MAX,
                ask: ask.clone(),
            };
            self.check_frame(
                &probe,
                0,
                "this ask",
                "shorten the question or its details (put long text in a file and ask about its path)",
            )?;
            match deliver_to {
                Addressee::Here(holder) => self.deliver_ask(&ask, &holder, db, out)?,
                Addressee::HerdChief => self.ask_up(&ask, db, out)?,
                Addressee::Nobody => {}
            }
            Ok(ask)
        })?;
        tracing::info!(ask = %ask.id, session = %session_id, to = ?ask.to.as_ref().map(|t| t.role), "ask opened");
        out.send(
            conn,
            &ServerMsg::Asked {
                id,
                ask: ask.clone(),
            },
        );
        self.presence.broadcast(&ServerMsg::AskOpened { ask }, out);
        Ok(())
    }

    /// Address a new ask to whom its session reports to: an assigned Lead's to its
    /// repository's Manager role (held or not), anyone else's to the holder of the role it
    /// reports to; with nobody above it here, to the herd's Chief when this core is a
    /// linked host that knows one. Whom to deliver it to.
    fn address_to_supervisor(
        &self,
        ask_id: AskId,
        session_id: &SessionId,
        db: &Connection,
    ) -> HubResult<Addressee> {
        let me = self.session_info(db, session_id)?;
        let reports_to = self.reports_to(&me, db)?;
        if reports_to.session_id.is_none()
            && let Some(lead) = self.assigned_lead(&me.id, db)?
        {
            // An assigned Lead asks its repository's Manager role, never the
            // Chief: the next Manager gets it.
            let to = AskTo {
                role: Role::Manager,
                repo_id: Some(lead.assignment.repo_id.clone()),
                project: Some(lead.assignment.project.clone()),
                session_id: None,
                session_name: None,
                worker: None,
            };
            store::asks::address(db, ask_id, &to)?;
        } else if let Some(holder) = &reports_to.session_id {
            let holder = self.session_info(db, holder)?;
            let repo_id = match holder.role {
                Role::Manager => me.repo_id.clone(),
                _ => None,
            };
            let project = repo_id.as_ref().and(me.project.clone());
            let to = AskTo {
                role: holder.role,
                repo_id,
                project,
                session_id: Some(holder.id.clone()),
                session_name: Some(holder.name.clone()),
                worker: None,
            };
            store::asks::address(db, ask_id, &to)?;
            return Ok(Addressee::Here(Box::new(holder)));
        } else if let Some(chief) = self.herd_chief() {
            let to = AskTo {
                role: Role::Chief,
                repo_id: None,
                project: None,
                session_id: Some(chief.session_id.clone()),
                session_name: Some(chief.session_name.clone()),
                worker: None,
            };
            store::asks::address(db, ask_id, &to)?;
            return Ok(Addressee::HerdChief);
        }
        Ok(Addressee::Nobody)
    }

    /// `list_asks`: the open asks, or every ask (read off the hub).
    pub(super) fn list_asks(
        &self,
        cx: Cx,
        req: requests::ListAsks,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if let Some(ask) = req.ask {
            let asks = store::asks::get(db, ask)?.into_iter().collect();
            out.send(cx.conn, &ServerMsg::Asks { id: cx.id, asks });
            return Ok(());
        }
        // The CLI and the bridges see the herd: the linked hosts' open asks too, each with
        // its host.
        let remote = match super::presence::sees_the_herd(cx.kind) {
            true => self.links.asks(),
            false => Vec::new(),
        };
        if req.all {
            // Every ask ever asked can be many: read off the hub.
            let id = cx.id;
            self.read_off_hub(cx, out, move |db| {
                let mut asks = store::asks::list(db, true)?;
                asks.extend(remote);
                Ok(ServerMsg::Asks { id, asks })
            });
            return Ok(());
        }
        let mut asks = store::asks::list(db, false)?;
        asks.extend(remote);
        out.send(cx.conn, &ServerMsg::Asks { id: cx.id, asks });
        Ok(())
    }

    pub(super) fn answer(
        &mut self,
        cx: Cx,
        req: requests::Answer,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let ask = self.answer_quietly(cx, req, db, out)?;
        out.send(cx.conn, &ServerMsg::Answered { id: cx.id, ask });
        Ok(())
    }

    /// Answer an ask (first answer wins), mail the answer to the asking session, tell its
    /// addressee and the subscribers; the caller replies.
    pub(super) fn answer_quietly(
        &mut self,
        cx: Cx,
        req: requests::Answer,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<crate::protocol::Ask> {
        let Cx { conn, kind, .. } = cx;
        let requests::Answer {
            ask: ask_id,
            text,
            by,
            ..
        } = req;
        if text.trim().is_empty() {
            return Err(invalid("answer text must not be empty"));
        }
        let ask = store::asks::get(db, ask_id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::UnknownAsk,
                format!("there is no ask {ask_id}; `shepherd asks` lists the open ones"),
            )
        })?;
        let (label, answerer) = if kind.is_human() {
            (self.human_label(conn, kind, by), None)
        } else {
            let me = self.presence.registered(conn)?.clone();
            let me = self.session_info(db, &me)?;
            self.check_addressee(&ask, &me, db)?;
            let to = ask.to.as_ref().expect("checked");
            let label = match to.worker {
                Some(_) => format!("owner {}", me.name),
                None => super::roles::role_and_name(to.role, to.project.as_deref(), &me.name),
            };
            (label, Some(me.id))
        };
        if ask.state == AskState::Answered {
            return Err(already_answered(&ask));
        }
        let now = now_ms();
        let from = Sender {
            kind,
            session_id: answerer.clone(),
            name: label.clone(),
        };
        // An integration's approval: the Manager hears the outcome, not the answer.
        let approval = store::projects::approval(db, ask_id)?;
        let answered = atomically(db, || {
            if !store::asks::answer(db, ask_id, &text, &label, now)? {
                let ask = store::asks::get(db, ask_id)?.expect("exists");
                return Err(already_answered(&ask));
            }
            let answered = store::asks::get(db, ask_id)?.expect("exists");
            // The answered ask goes out whole (`answered`, `ask_answered`, the notice to
            // its addressee): measured before anyone hears of the answer.
            let probe = ServerMsg::Answered {
                id: u64::MAX,
                ask: answered.clone(),
            };
            self.check_frame(
                &probe,
                self.answer_notice_reserve(),
                "this answer with its question",
                "shorten the answer",
            )?;
            if approval.is_some() {
                return Ok(answered);
            }
            let mailed = self.mail(
                NewMessage {
                    ask_id: Some(ask_id),
                    question: Some(&ask.question),
                    created_at: now,
                    ..NewMessage::plain(&ask.session_id, DeliveryKind::Answer, &text, &from)
                },
                db,
                out,
            )?;
            // Handed to a connected session: `unanswer` must know it may have been read.
            if mailed.connected {
                store::sessions::touch(db, &ask.session_id, now)?;
            }
            Ok(answered)
        })?;
        let ask = answered;
        tracing::info!(ask = %ask.id, by = %label, "ask answered");
        self.tell_addressee(&ask, answerer.as_ref(), db, out)?;
        self.worker_ask_answered(&ask, db, out)?;
        if let Some(approval) = approval {
            self.approval_answered(approval, &text, &label, db, out)?;
        }
        self.presence
            .broadcast(&ServerMsg::AskAnswered { ask: ask.clone() }, out);
        Ok(ask)
    }
}

impl State {
    /// A Pi session answers only an ask addressed to a role it holds now.
    fn check_addressee(
        &self,
        ask: &crate::protocol::Ask,
        me: &SessionInfo,
        db: &Connection,
    ) -> HubResult<()> {
        let Some(to) = &ask.to else {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                format!(
                    "ask {} is for the human; a session answers only asks addressed to a role it holds (ask_supervisor)",
                    ask.id
                ),
            )
            .with_details(serde_json::json!({ "reason": "not_addressee" })));
        };
        if to.worker.is_some() {
            if to.session_id.as_ref() != Some(&me.id) {
                return Err(HubError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "ask {} is a managed worker's question for its owner {}; only that session (or the human) answers it",
                        ask.id,
                        to.session_name.as_deref().unwrap_or("?")
                    ),
                )
                .with_details(serde_json::json!({ "reason": "not_direct_owner" })));
            }
            return Ok(());
        }
        let holder = store::leases::get(db, to.role, to.repo_id.as_deref())?;
        if holder.as_ref().map(|l| &l.session_id) != Some(&me.id) {
            let whom = super::roles::role_label(to.role, to.project.as_deref());
            return Err(HubError::new(
                ErrorCode::Forbidden,
                format!(
                    "ask {} is addressed to the {whom}, and this session is not the {whom}",
                    ask.id
                ),
            )
            .with_details(serde_json::json!({ "reason": "not_addressee" })));
        }
        Ok(())
    }

    /// After someone else answered an addressed ask, tell the role's holder (it got the
    /// ask and must not answer it again): a notice that starts no turn.
    fn tell_addressee(
        &self,
        ask: &crate::protocol::Ask,
        answerer: Option<&SessionId>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Some(to) = &ask.to else {
            return Ok(());
        };
        // Answered: a holder that has not read the ask yet does not get it at all.
        store::messages::withdraw_asks(db, &self.unread, ask.id)?;
        let holder = match to.worker {
            // A worker's question: its owner, whatever role it holds.
            Some(_) => to.session_id.clone(),
            None => store::leases::get(db, to.role, to.repo_id.as_deref())?.map(|l| l.session_id),
        };
        let Some(holder) = holder else {
            return Ok(());
        };
        if Some(&holder) == answerer {
            return Ok(());
        }
        let text = format!(
            "Ask {} from {} was answered by {}: {}",
            ask.id,
            ask.session_name,
            ask.answered_by.as_deref().unwrap_or("someone"),
            ask.answer.as_deref().unwrap_or_default()
        );
        let from = Self::core_sender();
        self.mail(
            NewMessage {
                ask_id: Some(ask.id),
                question: Some(&ask.question),
                ..NewMessage::plain(&holder, DeliveryKind::Notice, &text, &from)
            },
            db,
            out,
        )?;
        Ok(())
    }
}

fn already_answered(ask: &crate::protocol::Ask) -> HubError {
    let by = ask.answered_by.clone().unwrap_or_default();
    HubError::new(
        ErrorCode::AlreadyAnswered,
        format!(
            "ask {} was already answered by {by}: {:?}",
            ask.id,
            ask.answer.as_deref().unwrap_or_default()
        ),
    )
    .with_details(serde_json::json!({
        "answered_by": ask.answered_by,
        "answered_at": ask.answered_at,
        "answer": ask.answer,
    }))
}
