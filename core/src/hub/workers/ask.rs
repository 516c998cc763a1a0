//! A worker's question: `ask_owner` opens an ask addressed to its owner and blocks the
//! worker until the reply; the phones see it at once when the owner is a Manager or the
//! Chief, and after `workers.ask_card_after_secs` when it is a Lead.

use rusqlite::Connection;

use super::requests::{check_text, refused};
use crate::clock::now_ms;
use crate::hub::{Cx, HubCommand, HubResult, Out, State, atomically};
use crate::protocol::requests::AskOwner;
use crate::protocol::{
    AskId, AskState, AskTo, ClientKind, DeliveryKind, Role, Sender, ServerMsg, WorkerState,
};
use crate::store::{self, messages::NewMessage};

impl State {
    /// `ask_owner`: a bound worker asks its owner; it is blocked until the reply.
    pub(in crate::hub) fn ask_owner(
        &mut self,
        cx: Cx,
        req: AskOwner,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        check_text("question", &req.question)?;
        let me = self.presence.registered(cx.conn)?.clone();
        let row = store::workers::live_by_session(db, &me)?.ok_or_else(|| {
            refused(
                "not_a_worker",
                "ask_owner is for managed workers; this session has no owner (use ask_supervisor)",
            )
        })?;
        if let Some(ask) = row.worker.pending_ask {
            return Err(refused(
                "ask_pending",
                format!(
                    "ask {ask} is still waiting for your owner's reply; end your turn and wait"
                ),
            ));
        }
        if row.worker.state != WorkerState::Working {
            return Err(refused(
                "agent_busy",
                format!("this worker is {}; it cannot ask now", row.worker.state),
            ));
        }
        let owner = store::sessions::get_uncounted(db, &row.worker.owner_id)?;
        let owner_role = owner.as_ref().map_or(Role::Lead, |o| o.role);
        let now = now_ms();
        let ask = atomically(db, || {
            let ask_id = store::asks::insert(db, &me, &req.question, &[], None, None, now)?;
            let to = AskTo {
                role: owner_role,
                repo_id: None,
                project: None,
                session_id: Some(row.worker.owner_id.clone()),
                session_name: Some(row.worker.owner_name.clone()),
                worker: Some(row.worker.id),
            };
            store::asks::address(db, ask_id, &to)?;
            store::workers::set_pending_ask(db, row.worker.id, Some(ask_id), now)?;
            store::workers::set_state(db, row.worker.id, WorkerState::Blocked, now)?;
            let from = Sender {
                kind: ClientKind::Pi,
                session_id: Some(me.clone()),
                name: row.worker.label.clone(),
            };
            let text = format!(
                "Agent question · agent={} · definition={} · ask={}\n\n{}\n\nAnswer with reply_agent {{agent: \"{}\", answer}}.",
                row.worker.label, row.worker.definition, ask_id, req.question, row.worker.label
            );
            self.mail(
                NewMessage {
                    ask_id: Some(ask_id),
                    question: Some(&req.question),
                    ..NewMessage::plain(&row.worker.owner_id, DeliveryKind::AgentAsk, &text, &from)
                },
                db,
                out,
            )?;
            Ok(store::asks::get(db, ask_id)?.expect("just inserted"))
        })?;
        tracing::info!(worker = row.worker.id.get(), ask = %ask.id, "worker asked its owner");
        out.send(
            cx.conn,
            &ServerMsg::Asked {
                id: cx.id,
                ask: ask.clone(),
            },
        );
        // The phone shows at once what reaches a Manager or the Chief; a Lead's worker asks
        // stay between them until `workers.ask_card_after_secs` has passed (`shepherd asks`
        // lists them all).
        if matches!(owner_role, Role::Manager | Role::Chief) {
            self.presence.broadcast(&ServerMsg::AskOpened { ask }, out);
        } else {
            self.ask_card_timer(ask.id);
        }
        let row = self.worker_record(db, row.worker.id)?;
        self.worker_changed(row.worker, out);
        Ok(())
    }

    /// Wake the hub with [`HubCommand::AskCardDue`] once `workers.ask_card_after_secs`
    /// has passed. A core restart loses the timer; the bridges' resync (which lists every
    /// open ask) then shows the question.
    fn ask_card_timer(&self, ask: AskId) {
        let after = std::time::Duration::from_secs(self.facts.ask_card_after_secs);
        let hub = self.self_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(tx) = hub.upgrade() {
                let _ = tx.send(HubCommand::AskCardDue { ask }).await;
            }
        });
    }

    /// A Lead-owned worker's question waited long enough: shown on the phones as a card
    /// (`ask_opened`) when it is still open.
    pub(in crate::hub) fn ask_card_due(&mut self, ask: AskId, db: &Connection, out: &mut Out) {
        match store::asks::get(db, ask) {
            Ok(Some(ask)) if ask.state == AskState::Open => {
                tracing::info!(ask = %ask.id, "a worker's question waited: shown on the phones");
                self.presence.broadcast(&ServerMsg::AskOpened { ask }, out);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(%ask, error = %e, "cannot read a worker's question"),
        }
    }
}
