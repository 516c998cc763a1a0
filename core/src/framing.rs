//! Async frame I/O over any tokio stream: read one length-prefixed body with a size limit,
//! write one encoded frame. Shared by the server and the client so both sides agree on
//! what a truncated or oversize frame is.

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
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Read one frame body. `Ok(None)` is a clean end of stream between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(reader, &mut header).await?;
    if got == 0 {
        return Ok(None);
    }
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
    // The buffer grows as bytes arrive: a peer that announces a large frame and sends it
    // slowly (or never) holds only what it sent.
    let mut body = Vec::with_capacity(len.min(FIRST_CHUNK));
    let got = (&mut *reader)
        .take(len as u64)
        .read_to_end(&mut body)
        .await?;
    if got < len {
        return Err(FrameError::Truncated {
            got: HEADER_LEN + got,
            want: HEADER_LEN + len,
        });
    }
    Ok(Some(body))
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
