//! Frames to the connections' writers, after a batch's commit, under the outbox bounds: a
//! delivery that finds no room waits in the store (its session switches to replay, in id
//! order, as the writer drains); any other frame that finds no room closes its connection
//! as a slow consumer.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::Presence;
use crate::hub::{ConnId, Frame};
use crate::protocol::{ErrorCode, SessionId};

/// Most frames in a flush for which a connection's lone frame is written at once.
const WRITE_NOW_MOST: usize = 4;

impl Presence {
    /// Close `conn` with `code` (once: a connection already closing is left alone).
    pub(in crate::hub) fn close(&mut self, conn: ConnId, code: ErrorCode) {
        if let Some(close) = self.conns.get_mut(&conn).and_then(|c| c.close.take()) {
            let _ = close.send(code);
        }
    }

    /// Hand `frames` to their connections' writers; `max_bytes`: a connection's outbox
    /// bound in bytes (one frame larger than that still goes when nothing is queued).
    pub(in crate::hub) fn hand_out(&mut self, frames: Vec<Frame>, max_bytes: usize) {
        // Sessions whose outbox filled during this flush: nothing more for them now, so
        // deliveries never overtake each other.
        let mut stalled: HashSet<SessionId> = HashSet::new();
        // A connection's only frame of a small batch is written by the hub at once (no
        // hand-off to the writer task: the round trip's common case); several frames for
        // one connection go to its writer, which gathers them into one write.
        let alone: Vec<bool> = frames
            .iter()
            .map(|f| {
                frames.len() <= WRITE_NOW_MOST
                    && frames.iter().filter(|o| o.conn == f.conn).count() == 1
            })
            .collect();
        for (frame, alone) in frames.into_iter().zip(alone) {
            let Some(conn) = self.conns.get_mut(&frame.conn) else {
                continue;
            };
            // Over the byte bound unless nothing is queued (one large frame always goes).
            let len = frame.bytes.len();
            let queued = conn.handle.queued_bytes.load(Ordering::Acquire);
            let over = queued > 0 && queued.saturating_add(len) > max_bytes;
            let send = |bytes| match alone {
                true => conn.handle.write_now(bytes, over),
                false => conn.handle.queue(bytes, over),
            };
            let Some((session, id)) = frame.delivery else {
                match send(frame.bytes) {
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
            match send(frame.bytes) {
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
