//! Async frame I/O over any tokio stream: read one length-prefixed body with a size limit,
//! write one encoded frame. Shared by the server and the client so both sides agree on
//! what a truncated or oversize frame is. The server reads with [`read_frame_arriving`]:
//! a frame must arrive whole within a time once it has started, and its buffer, which
//! grows only as bytes arrive, draws on a byte budget shared by every connection
//! ([`FrameBudget`]), so peers that start frames and never finish them hold neither
//! memory nor their connection for long.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::protocol::frame::HEADER_LEN;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The prefix announced more than the limit; the body was not read.
    #[error("frame of {len} bytes is over the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    /// The stream ended after `got` of `want` bytes of a frame.
    #[error("stream ended inside a frame ({got} of {want} bytes)")]
    Truncated { got: usize, want: usize },
    /// The frame had not arrived whole (`got` of `want` bytes) `within` its first byte.
    #[error("frame not complete within {within:?} of its first byte ({got} of {want} bytes)")]
    Stalled {
        got: usize,
        want: usize,
        within: Duration,
    },
    /// Growing the frame's buffer would take the bytes held for unfinished frames over
    /// the budget (`held` of `max` were held by frames still arriving).
    #[error("frame of {len} bytes does not fit: {held} of {max} bytes held for unfinished frames")]
    OverBudget { len: usize, held: usize, max: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Bytes that buffers of frames still arriving may hold together, across connections,
/// beyond the first [`FIRST_CHUNK`] of each (a frame that small never waits on others).
#[derive(Debug)]
pub struct FrameBudget {
    held: AtomicUsize,
    max: usize,
}

impl FrameBudget {
    pub fn new(max: usize) -> FrameBudget {
        FrameBudget {
            held: AtomicUsize::new(0),
            max,
        }
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Take `n` bytes unless that would exceed the budget.
    fn take(&self, n: usize) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(n).filter(|&after| after <= self.max)
            })
            .is_ok()
    }
}

/// What one frame's buffer took from a [`FrameBudget`]; given back when dropped.
struct Share<'a> {
    budget: Option<&'a FrameBudget>,
    bytes: usize,
}

impl Share<'_> {
    fn take(&mut self, n: usize) -> bool {
        match self.budget {
            None => true,
            Some(budget) if budget.take(n) => {
                self.bytes += n;
                true
            }
            Some(_) => false,
        }
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        if let Some(budget) = self.budget {
            budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

/// How the server reads a frame: it must be whole `within` this time of its first byte,
/// and its buffer draws on `budget`.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    pub within: Duration,
    pub budget: &'a FrameBudget,
}

/// Read one frame body. `Ok(None)` is a clean end of stream between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut progress = (0, HEADER_LEN);
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(reader, &mut header).await?;
    if got == 0 {
        return Ok(None);
    }
    finish(reader, header, got, max, None, &mut progress)
        .await
        .map(Some)
}

/// [`read_frame`] under the server's [`Arrival`] bounds. The wait for a frame to start is
/// not bounded (a greeted client may stay quiet as long as it likes); from its first byte
/// on, the frame must be whole within `arrival.within` ([`FrameError::Stalled`]), and its
/// buffer may not take the budget's bytes over its maximum ([`FrameError::OverBudget`]).
pub async fn read_frame_arriving<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
    arrival: Arrival<'_>,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    if reader.read(&mut header[..1]).await? == 0 {
        return Ok(None);
    }
    let mut progress = (1, HEADER_LEN);
    let timed = {
        let mut rest = std::pin::pin!(finish(
            reader,
            header,
            1,
            max,
            Some(arrival.budget),
            &mut progress,
        ));
        // Most frames are whole in the reader's buffer once their first byte is: those
        // are read without arming (and disarming) a timer.
        let now = std::future::poll_fn(|cx| Poll::Ready(rest.as_mut().poll(cx))).await;
        match now {
            Poll::Ready(body) => Ok(body),
            Poll::Pending => tokio::time::timeout(arrival.within, rest).await,
        }
    };
    match timed {
        Ok(body) => body.map(Some),
        Err(_) => {
            let (got, want) = progress;
            Err(FrameError::Stalled {
                got,
                want,
                within: arrival.within,
            })
        }
    }
}

/// The rest of a frame whose header's first `have` bytes are read. `progress` follows
/// (bytes read, bytes of the whole frame) for a caller that gives up waiting.
async fn finish<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut header: [u8; HEADER_LEN],
    have: usize,
    max: usize,
    budget: Option<&FrameBudget>,
    progress: &mut (usize, usize),
) -> Result<Vec<u8>, FrameError> {
    let got = have + read_full(reader, &mut header[have..]).await?;
    if got < HEADER_LEN {
        return Err(FrameError::Truncated {
            got,
            want: HEADER_LEN,
        });
    }
    let len = crate::protocol::frame::body_len(header);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    *progress = (HEADER_LEN, HEADER_LEN + len);
    // The buffer grows as bytes arrive (doubling from FIRST_CHUNK, never past `len`): a
    // peer that announces a large frame and sends it slowly, or never, holds only about
    // what it sent. The first chunk is every connection's own (bounded by the number of
    // connections), so a small frame is never refused; growth beyond it draws on the
    // budget.
    let mut share = Share { budget, bytes: 0 };
    let mut body: Vec<u8> = Vec::with_capacity(len.min(FIRST_CHUNK));
    while body.len() < len {
        if body.len() == body.capacity() {
            let target = (body.capacity() * 2).min(len);
            let grow = target - body.capacity();
            if !share.take(grow) {
                let budget = budget.expect("only a budget refuses");
                return Err(FrameError::OverBudget {
                    len,
                    held: budget.held(),
                    max: budget.max(),
                });
            }
            body.reserve_exact(target - body.len());
        }
        let want = (len - body.len()) as u64;
        let n = (&mut *reader).take(want).read_buf(&mut body).await?;
        if n == 0 {
            return Err(FrameError::Truncated {
                got: HEADER_LEN + body.len(),
                want: HEADER_LEN + len,
            });
        }
        *progress = (HEADER_LEN + body.len(), HEADER_LEN + len);
    }
    Ok(body)
}

/// What a frame's buffer starts with; it grows as the rest arrives.
const FIRST_CHUNK: usize = 16 * 1024;

/// Fill `buf` unless the stream ends first; returns how many bytes were read.
async fn read_full<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = reader.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

/// Write one already encoded frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &[u8],
) -> std::io::Result<()> {
    writer.write_all(frame).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(len: usize) -> [u8; HEADER_LEN] {
        (len as u32).to_be_bytes()
    }

    #[tokio::test]
    async fn a_whole_frame_is_read_and_gives_its_bytes_back() {
        let budget = FrameBudget::new(1 << 20);
        let (mut peer, mut ours) = tokio::io::duplex(1 << 20);
        let body = vec![7u8; 100_000];
        peer.write_all(&header(body.len())).await.unwrap();
        peer.write_all(&body).await.unwrap();
        drop(peer);
        let arrival = Arrival {
            within: Duration::from_secs(60),
            budget: &budget,
        };
        let got = read_frame_arriving(&mut ours, 1 << 20, arrival).await;
        assert_eq!(got.unwrap().unwrap(), body);
        assert_eq!(budget.held(), 0);
        assert!(matches!(
            read_frame_arriving(&mut ours, 1 << 20, arrival).await,
            Ok(None)
        ));
    }

    #[tokio::test]
    async fn an_unfinished_frame_holds_what_arrived_and_stalls() {
        let budget = FrameBudget::new(1 << 20);
        let (mut peer, mut ours) = tokio::io::duplex(1 << 20);
        peer.write_all(&header(500_000)).await.unwrap();
        peer.write_all(&[1u8; 20_000]).await.unwrap();
        let arrival = Arrival {
            within: Duration::from_millis(1),
            budget: &budget,
        };
        let err = read_frame_arriving(&mut ours, 1 << 20, arrival)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Stalled {
                    got: 20_004,
                    want: 500_004,
                    ..
                }
            ),
            "{err:?}"
        );
        // Given back once the read is over.
        assert_eq!(budget.held(), 0);
    }

    #[tokio::test]
    async fn a_frame_that_would_take_the_budget_over_is_refused() {
        let budget = FrameBudget::new(64 * 1024);
        // Another connection's unfinished frame holds 48 KiB.
        let mut other = Share {
            budget: Some(&budget),
            bytes: 0,
        };
        assert!(other.take(48 * 1024));
        let (mut peer, mut ours) = tokio::io::duplex(1 << 20);
        peer.write_all(&header(100_000)).await.unwrap();
        peer.write_all(&[1u8; 40_000]).await.unwrap();
        let arrival = Arrival {
            within: Duration::from_secs(60),
            budget: &budget,
        };
        let err = read_frame_arriving(&mut ours, 1 << 20, arrival)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::OverBudget {
                    len: 100_000,
                    max: 65_536,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(budget.held(), 48 * 1024);
        drop(other);
        assert_eq!(budget.held(), 0);
    }

    #[tokio::test]
    async fn a_small_frame_is_read_whatever_others_hold() {
        let budget = FrameBudget::new(64 * 1024);
        let mut other = Share {
            budget: Some(&budget),
            bytes: 0,
        };
        assert!(other.take(64 * 1024));
        let (mut peer, mut ours) = tokio::io::duplex(1 << 20);
        let body = vec![5u8; FIRST_CHUNK];
        peer.write_all(&header(body.len())).await.unwrap();
        peer.write_all(&body).await.unwrap();
        let arrival = Arrival {
            within: Duration::from_secs(60),
            budget: &budget,
        };
        let got = read_frame_arriving(&mut ours, 1 << 20, arrival).await;
        assert_eq!(got.unwrap().unwrap(), body);
        assert_eq!(budget.held(), 64 * 1024);
    }

    #[tokio::test]
    async fn the_client_reader_is_unbounded_in_time_and_budget() {
        let (mut peer, mut ours) = tokio::io::duplex(1 << 20);
        let body = vec![3u8; 300_000];
        peer.write_all(&header(body.len())).await.unwrap();
        peer.write_all(&body).await.unwrap();
        peer.write_all(&header(10)).await.unwrap();
        peer.write_all(&[0u8; 4]).await.unwrap();
        drop(peer);
        assert_eq!(read_frame(&mut ours, 1 << 20).await.unwrap().unwrap(), body);
        let err = read_frame(&mut ours, 1 << 20).await.unwrap_err();
        assert!(
            matches!(err, FrameError::Truncated { got: 8, want: 14 }),
            "{err:?}"
        );
    }
}
