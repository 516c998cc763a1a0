//! Handing a committed batch's output on: git jobs to the git lane, process work to the
//! worker host, closes, then every frame to its connection's writer under the outbox
//! bounds (a delivery that finds no room waits in the store and the session replays).

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::{Out, State, launched};
use crate::protocol::{ErrorCode, SessionId};

impl State {
    /// Hand frames to connection writers. A delivery that finds the outbox full waits in
    /// the store (the session switches to replay); any other frame that finds it full
    /// closes that connection as a slow consumer.
    pub(super) fn flush(&mut self, mut out: Out) {
        let git_jobs = std::mem::take(&mut out.git);
        if !git_jobs.is_empty() {
            self.git.run(git_jobs);
        }
        let host_ops = std::mem::take(&mut out.host);
        if !host_ops.is_empty() {
            let host = self.host.as_ref().map(|h| &h.host);
            launched::host_ops::run(host, host_ops, &self.self_tx);
        }
        for (conn, code) in out.closes {
            if let Some(close) = self.conns.get_mut(&conn).and_then(|c| c.close.take()) {
                let _ = close.send(code);
            }
        }
        // Sessions whose outbox filled during this flush: nothing more for them now, so
        // deliveries never overtake each other.
        let mut stalled: HashSet<SessionId> = HashSet::new();
        let max_bytes = self.facts.limits.max_outbound_bytes;
        for frame in out.frames {
            let Some(conn) = self.conns.get_mut(&frame.conn) else {
                continue;
            };
            // Over the byte bound unless nothing is queued (one large frame always goes).
            let len = frame.bytes.len();
            let queued = conn.handle.queued_bytes.load(Ordering::Acquire);
            let over = queued > 0 && queued.saturating_add(len) > max_bytes;
            let Some((session, id)) = frame.delivery else {
                match conn.handle.queue(frame.bytes, over) {
                    Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        if let Some(close) = conn.close.take() {
                            tracing::warn!(
                                conn = frame.conn,
                                client = %conn.handle.client_name,
                                "client is not reading its frames; disconnecting it (slow_consumer)"
                            );
                            let _ = close.send(ErrorCode::SlowConsumer);
                        }
                    }
                }
                continue;
            };
            let Some(live) = self.live.get_mut(&session) else {
                continue;
            };
            if live.conn != frame.conn || id <= live.last_sent || stalled.contains(&session) {
                continue;
            }
            match conn.handle.queue(frame.bytes, over) {
                Ok(()) => live.last_sent = id,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    live.replaying = true;
                    conn.handle.drain_wanted.store(true, Ordering::Release);
                    stalled.insert(session);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }
}
