//! # Who supervises whom, as the bridge knows it
//!
//! [`ActivePairings`]: the active pairings as the core last told them (the resync
//! snapshot, then `pairing_event`s and the replies to the pairing commands), so that an
//! ask from a session that supervises a worker is shown in the *worker's* topic or
//! thread, where the human watches that worker. [`Here`]: where a chat command was
//! written, and by whom.

use std::collections::HashMap;

use shepherd_core::protocol::{Pairing, PairingState, SessionId};

/// The active pairings, by supervisor session id.
#[derive(Debug, Clone, Default)]
pub struct ActivePairings {
    by_supervisor: HashMap<SessionId, Pairing>,
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
                    .insert(pairing.supervisor_id.clone(), pairing.clone());
            }
            PairingState::Ended => {
                if self
                    .by_supervisor
                    .get(&pairing.supervisor_id)
                    .is_some_and(|p| p.id == pairing.id)
                {
                    self.by_supervisor.remove(&pairing.supervisor_id);
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
    /// The linked host that session is on, when it is another machine's.
    pub host: Option<&'a str>,
    /// The human, for the core's records (`telegram:@ada`).
    pub by: &'a str,
}

impl Here<'_> {
    /// The linked host `session` is on and its name there: the host of the place the
    /// command was written in when it names that place's session, else the host it is
    /// written with (`gpu:train-7`), else none (this core's).
    pub fn on_host<'b>(&self, session: &'b str) -> (Option<&'b str>, &'b str)
    where
        Self: 'b,
    {
        let known = self.host.filter(|_| self.session == Some(session));
        super::on_host(session, known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairing(id: u64, supervisor: &str, worker: &str, state: PairingState) -> Pairing {
        Pairing {
            id: id.into(),
            supervisor_id: supervisor.into(),
            supervisor_name: format!("{supervisor}-name"),
            worker_id: worker.into(),
            worker_name: format!("{worker}-name"),
            state,
            ..shepherd_core::examples::pairing()
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
