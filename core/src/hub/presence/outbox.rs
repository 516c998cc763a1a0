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
        let mut alone = [false; WRITE_NOW_MOST];
        if frames.len() <= WRITE_NOW_MOST {
            for (i, f) in frames.iter().enumerate() {
                alone[i] = frames.iter().filter(|o| o.conn == f.conn).count() == 1;
            }
        }
        for (i, frame) in frames.into_iter().enumerate() {
            let alone = alone.get(i).copied().unwrap_or(false);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use bytes::Bytes;
    use tokio::io::AsyncReadExt;
    use tokio::net::UnixStream;
    use tokio::sync::mpsc;

    use crate::hub::ConnHandle;
    use crate::protocol::ClientKind;

    /// A frame the hub writes at once and the frames queued behind what the socket did not
    /// take reach the peer whole and in order, and the queued bytes are counted.
    #[tokio::test]
    async fn a_lone_frame_is_written_at_once_and_the_rest_queues_behind_it() {
        let (ours, mut peer) = UnixStream::pair().unwrap();
        let (_read, write) = ours.into_split();
        let socket = Arc::new(write);
        let (outbox, mut rx) = mpsc::channel(16);
        let handle = ConnHandle {
            kind: ClientKind::Pi,
            client_name: "pi".into(),
            pid: None,
            outbox,
            socket: socket.clone(),
            drain_wanted: Arc::new(AtomicBool::new(false)),
            queued_bytes: Arc::new(AtomicUsize::new(0)),
            connected_at: 0,
        };
        let queued = || handle.queued_bytes.load(Ordering::Acquire);

        // Nothing queued: written on the socket, nothing for the writer.
        handle
            .write_now(Bytes::from_static(b"first;"), false)
            .unwrap();
        assert!(rx.try_recv().is_err());
        assert_eq!(queued(), 0);

        // Larger than the socket takes: its rest is queued, counted, behind nothing.
        let big: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
        handle.write_now(Bytes::from(big.clone()), false).unwrap();
        let rest = rx
            .try_recv()
            .expect("the rest of the large frame is queued");
        assert!(!rest.is_empty() && rest.len() < big.len());
        assert_eq!(queued(), rest.len());

        // Something is queued now: the next frame waits behind it, even written "now" and
        // with room in the socket again.
        let mut early = vec![0u8; 64 * 1024];
        peer.read_exact(&mut early).await.unwrap();
        handle
            .write_now(Bytes::from_static(b";last"), false)
            .unwrap();
        let last = rx.try_recv().expect("queued behind the rest");
        assert_eq!(queued(), rest.len() + last.len());

        // And while a replay waits for the writer to drain, nothing is written at once.
        let empty = ConnHandle {
            drain_wanted: Arc::new(AtomicBool::new(true)),
            queued_bytes: Arc::new(AtomicUsize::new(0)),
            outbox: mpsc::channel(1).0,
            ..handle
        };
        assert!(empty.write_now(Bytes::from_static(b"x"), false).is_err());

        // The writer's part, then everything the peer reads is in order.
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            peer.read_to_end(&mut got).await.unwrap();
            got
        });
        for frame in [rest, last] {
            let mut bytes = &frame[..];
            while !bytes.is_empty() {
                socket.writable().await.unwrap();
                if let Ok(n) = socket.try_write(bytes) {
                    bytes = &bytes[n..];
                }
            }
        }
        drop(empty);
        drop(socket);
        let got = [early, reader.await.unwrap()].concat();
        let mut want = b"first;".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b";last");
        assert!(
            got == want,
            "the peer read {} bytes out of order",
            got.len()
        );
    }
}
