//! Handing a committed batch's output on: git jobs to the git lane, process work to the
//! worker host, requests for linked hosts to their links, closes, then every frame to its
//! connection's writer (presence's `hand_out`, under the outbox bounds).

use super::{Out, State, launched};

impl State {
    /// Hand the batch's work on: git jobs, process work, closes, frames.
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
        for (host, forward) in std::mem::take(&mut out.forwards) {
            let (conn, id) = (forward.conn, forward.id);
            if let Err(u) = self.links.forward(&host, forward) {
                out.error(conn, Some(id), super::hosts::unreachable(&host, u));
            }
        }
        for (host, what) in std::mem::take(&mut out.to_far) {
            self.links.to_far(&host, what);
        }
        for (conn, code) in out.closes {
            self.presence.close(conn, code);
        }
        let max_bytes = self.facts.limits.max_outbound_bytes;
        self.presence.hand_out(out.frames, max_bytes);
    }
}
