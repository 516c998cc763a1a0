//! # Supervision on the bridge side
//!
//! What every bridge needs to show pairings the same way: [`ActivePairings`], the active
//! pairings as the core last told them (the resync snapshot, then `pairing_event`s), so
//! that an ask from a session that supervises a worker is shown in the *worker's* topic
//! or thread, where the human watches that worker; and the answers to the pairing
//! commands (`supervise`, `goal`, `look`, `stop`), which become `supervise`, `set_goal`,
//! `look` and `unpair` requests with the human as `by`. A command written in a session's
//! topic or thread may leave out the session ([`SessionArgs::target`]); the core's
//! refusals (`no_candidate`, `already_paired`, `not_paired`, …) are shown in its own
//! words, which say what to do.

use std::collections::HashMap;

use shepherd_core::protocol::{Pairing, PairingState, requests};

use crate::chat::commands::{SessionArgs, UsageError};
use crate::chat::pairing;
use crate::chat::render;
use crate::chat::replies::refused;
use crate::core_link::{CommandReply, CoreLink};

/// The active pairings, by supervisor session id.
#[derive(Debug, Clone, Default)]
pub struct ActivePairings {
    by_supervisor: HashMap<String, Pairing>,
}

impl ActivePairings {
    /// Start over from the core's list of active pairings.
    pub fn reset(&mut self, pairings: Vec<Pairing>) {
        self.by_supervisor.clear();
        for p in pairings {
            self.apply(&p);
        }
    }

    /// Take a pairing's new state from an event or a response.
    pub fn apply(&mut self, pairing: &Pairing) {
        match pairing.state {
            PairingState::Active => {
                self.by_supervisor
                    .insert(pairing.supervisor_id.to_string(), pairing.clone());
            }
            PairingState::Ended => {
                if self
                    .by_supervisor
                    .get(pairing.supervisor_id.as_str())
                    .is_some_and(|p| p.id == pairing.id)
                {
                    self.by_supervisor.remove(pairing.supervisor_id.as_str());
                }
            }
        }
    }

    /// The session whose topic or thread shows `session`'s asks: the worker it
    /// supervises, else itself.
    pub fn home_of<'a>(&'a self, session: &'a str) -> &'a str {
        self.by_supervisor
            .get(session)
            .map_or(session, |p| p.worker_id.as_str())
    }
}

/// Where a chat command was written, and by whom.
#[derive(Debug, Clone, Copy)]
pub struct Here<'a> {
    /// The session of the topic or thread it was written in (or of the message it
    /// replies to), if any.
    pub session: Option<&'a str>,
    /// The human, for the core's records (`telegram:@ada`).
    pub by: &'a str,
}

impl CoreLink {
    /// `supervise [session] [goal]`: pair a free supervisor with the session.
    pub(crate) async fn supervise(
        &mut self,
        args: &SessionArgs,
        prefix: char,
        here: Here<'_>,
    ) -> CommandReply {
        let Some((worker, goal)) = self.target(args, here).await else {
            return usage(prefix, UsageError::SuperviseWithoutSession);
        };
        let goal = Some(goal).filter(|g| !g.is_empty());
        let reply = self
            .call(requests::Supervise {
                worker: Some(worker.clone()),
                goal: goal.clone(),
                by: Some(here.by.to_string()),
                ..Default::default()
            })
            .await;
        match reply {
            Ok(pairing) => CommandReply::Pairing {
                reply: pairing::started(&pairing, Some(here.by)),
                pairing: Box::new(pairing),
                announced: true,
            },
            Err(e) => CommandReply::Say(refused(e)),
        }
    }

    /// `goal [session] <goal>`: change the goal of the session's pairing.
    pub(crate) async fn set_goal(
        &mut self,
        args: &SessionArgs,
        prefix: char,
        here: Here<'_>,
    ) -> CommandReply {
        let Some((session, goal)) = self.target(args, here).await else {
            return usage(prefix, UsageError::GoalWithoutText { session: None });
        };
        if goal.is_empty() {
            let session = Some(session);
            return usage(prefix, UsageError::GoalWithoutText { session });
        }
        let reply = self
            .call(requests::SetGoal {
                goal: goal.clone(),
                session: Some(session.clone()),
                by: Some(here.by.to_string()),
                ..Default::default()
            })
            .await;
        match reply {
            Ok(pairing) => CommandReply::Pairing {
                reply: pairing::goal_changed(&pairing, Some(here.by)),
                pairing: Box::new(pairing),
                announced: true,
            },
            Err(e) => CommandReply::Say(refused(e)),
        }
    }

    /// `look [session]`: deliver a view to the session's supervisor now.
    pub(crate) async fn look(
        &mut self,
        session: Option<&str>,
        prefix: char,
        here: Here<'_>,
    ) -> CommandReply {
        let Some(session) = session.or(here.session) else {
            return usage(prefix, UsageError::WithoutSession { command: "look" });
        };
        let reply = self
            .call(requests::Look {
                session: Some(session.to_string()),
                by: Some(here.by.to_string()),
                ..Default::default()
            })
            .await;
        match reply {
            Ok(pairing) => CommandReply::Pairing {
                reply: pairing::looking(&pairing),
                pairing: Box::new(pairing),
                announced: false,
            },
            Err(e) => CommandReply::Say(refused(e)),
        }
    }

    /// `stop [session]`: end the session's pairing.
    pub(crate) async fn stop(
        &mut self,
        session: Option<&str>,
        prefix: char,
        here: Here<'_>,
    ) -> CommandReply {
        let Some(session) = session.or(here.session) else {
            return usage(prefix, UsageError::WithoutSession { command: "stop" });
        };
        let reply = self
            .call(requests::Unpair {
                session: Some(session.to_string()),
                by: Some(here.by.to_string()),
                ..Default::default()
            })
            .await;
        match reply {
            Ok(pairing) => CommandReply::Pairing {
                reply: pairing::stopped(&pairing, Some(here.by)),
                pairing: Box::new(pairing),
                announced: true,
            },
            Err(e) => CommandReply::Say(refused(e)),
        }
    }

    /// The session and text of `args` where the command was written. In a session's
    /// topic, whether the first word is a session is asked of the core (an exact id or
    /// name among every known session).
    async fn target(&mut self, args: &SessionArgs, here: Here<'_>) -> Option<(String, String)> {
        let named = if here.session.is_some() && !args.first.is_empty() && !args.quoted {
            match self.call(requests::ListSessions { id: 0, all: true }).await {
                Ok(sessions) => sessions
                    .iter()
                    .any(|s| s.id == args.first || s.name == args.first),
                _ => false,
            }
        } else {
            false
        };
        args.target(here.session, |_| named)
    }
}

fn usage(prefix: char, error: UsageError) -> CommandReply {
    CommandReply::Say(render::usage(prefix, &error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairing(id: u64, supervisor: &str, worker: &str, state: PairingState) -> Pairing {
        Pairing {
            id,
            supervisor_id: supervisor.into(),
            supervisor_name: format!("{supervisor}-name"),
            worker_id: worker.into(),
            worker_name: format!("{worker}-name"),
            cwd: "/src".into(),
            goal: None,
            goal_file: None,
            state,
            looks: 0,
            steers: 0,
            created_at: 0,
            last_look_at: None,
            ended_at: None,
            end_reason: None,
            ended_by: None,
            evidence: None,
            supervisor_connected: true,
            worker_connected: true,
        }
    }

    #[test]
    fn a_supervisors_asks_go_to_its_workers_place_while_paired() {
        let mut active = ActivePairings::default();
        active.reset(vec![pairing(1, "sup", "work", PairingState::Active)]);
        assert_eq!(active.home_of("sup"), "work");
        assert_eq!(active.home_of("work"), "work");
        assert_eq!(active.home_of("other"), "other");
        // An older pairing's end does not undo the newer one of the same supervisor.
        active.apply(&pairing(2, "sup", "work2", PairingState::Active));
        active.apply(&pairing(1, "sup", "work", PairingState::Ended));
        assert_eq!(active.home_of("sup"), "work2");
        active.apply(&pairing(2, "sup", "work2", PairingState::Ended));
        assert_eq!(active.home_of("sup"), "sup");
        active.apply(&pairing(3, "sup", "work", PairingState::Active));
        active.reset(Vec::new());
        assert_eq!(active.home_of("sup"), "sup");
    }
}
