//! What the human does in the room, read by the relay: each message or reaction becomes
//! one [`Action`] ([`decide`], pure), carried out here through the relay's calls
//! ([`Relay::on_command`], [`Relay::reply_to_ask`], [`Relay::answer`], [`Relay::typed`],
//! [`Relay::steer`], [`Relay::undo`]);
//! refusals go to the audit log. Invites from allowed users are accepted.

use std::time::Duration;

use matrix_sdk::ruma::OwnedRoomId;
use shepherd_core::protocol::{AskRef, AskState};

use super::bridge::DIFF_KEY;
use super::bridge::Matrix;
use super::decide::{self, Action, Incoming};
use super::events::MatrixEvent;
use crate::chat::commands::{self, ChatCommand};
use crate::chat::render::{self, Rendered};
use crate::chat::split;
use crate::relay::Relay;

impl Relay<Matrix> {
    pub async fn on_matrix(&mut self, event: MatrixEvent) {
        match event {
            MatrixEvent::Invite { room, inviter } => self.on_invite(room, inviter),
            MatrixEvent::Incoming(incoming) => {
                let m = &self.platform;
                let action = decide::decide(&incoming, &m.me, &m.allow, &m.store);
                self.act(action, &incoming).await;
            }
        }
    }

    /// Join rooms allowed users invite the bot to; refuse (and audit) other invites.
    fn on_invite(&mut self, room: OwnedRoomId, inviter: String) {
        if !self.platform.allow.allows_user(&inviter) {
            let reason = format!("inviter {inviter} is not in allowed_users");
            self.refuse(&inviter, room.as_str(), "invite", &reason);
            return;
        }
        tracing::info!(%room, %inviter, "matrix: joining a room an allowed user invited the bot to");
        let (client, shutdown) = (self.platform.client.clone(), self.platform.shutdown.clone());
        // Synapse may send the invite before the bot can join: retry for a while.
        tokio::spawn(async move {
            let mut delay = Duration::from_secs(1);
            loop {
                match client.join_room_by_id(&room).await {
                    Ok(_) => return,
                    Err(e) if delay > Duration::from_secs(300) => {
                        tracing::warn!(%room, error = %e, "matrix: could not join the room");
                        return;
                    }
                    Err(_) => {}
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                delay *= 2;
            }
        });
    }

    /// 🔄 on a peek: take it again and edit it in place (or say why not, there).
    async fn refresh_peek(&mut self, target: &str, event: &str) {
        let rendered = match self.refreshed_peek(target).await {
            Ok(peek) => crate::chat::peek::peek(&peek, crate::matrix::bridge::PEEK_HINT),
            Err(said) => said,
        };
        if let Ok(event) = matrix_sdk::ruma::OwnedEventId::try_from(event) {
            self.platform
                .outbox
                .push(crate::matrix::outbox::MatrixOp::Edit {
                    event,
                    html: rendered.html,
                    plain: rendered.plain,
                });
        }
    }

    async fn act(&mut self, action: Action, incoming: &Incoming) {
        let by = decide::who(&incoming.sender);
        match action {
            Action::Ignore => {}
            Action::Refuse { reason } => {
                let what = incoming.kind.noun();
                self.refuse(&incoming.sender, &incoming.room, what, &reason);
            }
            Action::Command { command, thread } => {
                // In a session's thread, the pairing commands may leave out the session.
                let session = thread
                    .as_deref()
                    .and_then(|root| self.platform.store.session_of_thread(root).ok()?);
                self.on_command(command, thread, session.as_deref(), &by)
                    .await
            }
            Action::Answer { ask, text, thread } => {
                // A reply to the card: the card's edit confirms it.
                self.reply_to_ask(&ask, &text, &by, thread).await;
            }
            Action::Approval { approval, key } => {
                let Some(decision) = crate::matrix::bridge::approval_decision(&key) else {
                    return; // Not a decision key (a 👀, say).
                };
                let scope = decision.unwrap_or_default();
                self.decide_approval(approval, decision.is_some(), scope, None, &by, None)
                    .await;
            }
            Action::DenyApproval {
                approval,
                reason,
                thread,
            } => {
                let scope = shepherd_core::protocol::ApprovalScope::Once;
                self.decide_approval(approval, false, scope, Some(&reason), &by, thread)
                    .await;
            }
            Action::React {
                ask: asked,
                key,
                card,
            } => self.react(&asked, &key, &card, &by).await,
            Action::Steer {
                session,
                text,
                thread,
            } => self.steer(&session, &text, &by, thread).await,
            Action::Typed {
                session,
                text,
                thread,
            } => self.typed(&session, &text, &by, thread).await,
            Action::RefreshPeek { target, event } => self.refresh_peek(&target, &event).await,
            Action::Undo { ask, offer } => {
                let said = self.undo(&ask, &by).await;
                // Said in the offer's thread.
                let thread = self
                    .platform
                    .store
                    .about(&offer)
                    .ok()
                    .flatten()
                    .and_then(|session| self.platform.thread_root(&session));
                self.say(thread, said).await;
            }
            Action::File {
                session,
                file,
                thread,
            } => self.on_file(session, file, &by, thread).await,
            Action::Help { thread } => {
                let help = render::help('!');
                let note = "To answer a question or steer a session, write in its thread, or use !steer &lt;session&gt; &lt;text&gt;.";
                let rendered = Rendered {
                    html: format!("{note}\n\n{}", help.html),
                    plain: format!("{}\n\n{}", split::text_of(note), help.plain),
                };
                self.say(thread, rendered).await;
            }
        }
    }

    /// A reaction `key` on the `card` of ask `asked`: the answer with that option.
    async fn react(&mut self, asked: &AskRef, key: &str, card: &str, by: &str) {
        let Some(ask) = self.ask(asked).await else {
            return;
        };
        let thread = self
            .platform
            .store
            .card_at(card)
            .ok()
            .flatten()
            .map(|c| c.thread_root);
        // 🧾 on an integration's card: its Lead's diff, as !diff shows it.
        if key.trim_end_matches('\u{fe0f}') == DIFF_KEY
            && let Some(target) = crate::chat::projects::integration_target(&ask)
        {
            self.on_command(ChatCommand::Diff(Some(target)), thread, None, by)
                .await;
            return;
        }
        let Some(answer) = commands::reaction_option(&ask, key) else {
            return; // Not an option key (a 👍, say).
        };
        if ask.state == AskState::Answered {
            return; // A late tap on an answered card: the card already says so.
        }
        self.answer(asked, &answer, by, thread).await;
    }

    /// Write a refusal to the audit log (one JSON line) and the log.
    fn refuse(&self, user: &str, room: &str, what: &str, reason: &str) {
        tracing::warn!(target: "audit", user, room, what, reason, "matrix: ignored");
        self.audit(serde_json::json!({
            "user": user,
            "room": room,
            "what": what,
            "reason": reason,
        }));
    }
}
