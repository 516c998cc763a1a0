//! # Listings across the herd
//!
//! The home core mirrors its linked hosts' sessions and asks, but answers the other
//! listings (roles, workers, projects, pairings) for one core at a time: its own, or a
//! linked host's when the request names it (`host`). [`Client::across_hosts`] asks this
//! core, then each connected linked host in turn, and returns every record with the hosts
//! it could not hear from and why, so that a listing of the whole herd says what it is
//! missing instead of leaving it out silently.

use super::{Client, ClientError, Request};
use crate::protocol::{ErrorCode, LinkState, requests};

/// One listing gathered across the herd.
#[derive(Debug)]
pub struct Herd<T> {
    /// This core's records, then each linked host's (marked with their host).
    pub items: Vec<T>,
    /// Linked hosts left out: their name and why (not connected, or the link dropped
    /// while asking).
    pub missing: Vec<(String, String)>,
}

impl Client {
    /// `make(None)` asked of this core, then `make(Some(host))` of each linked host that
    /// is connected. A host whose link is down or drops meanwhile is in `missing`; any
    /// other refusal is the caller's error.
    pub async fn across_hosts<R, T>(
        &mut self,
        make: impl Fn(Option<String>) -> R,
    ) -> Result<Herd<T>, ClientError>
    where
        R: Request<Reply = Vec<T>>,
    {
        let (items, missing) = self
            .across_hosts_merged(make, |all, more| all.extend(more))
            .await?;
        Ok(Herd { items, missing })
    }

    /// As [`Client::across_hosts`], for a reply that is not a list: each linked host's is
    /// `merge`d into this core's. Returns the whole and the hosts left out.
    pub async fn across_hosts_merged<R>(
        &mut self,
        make: impl Fn(Option<String>) -> R,
        mut merge: impl FnMut(&mut R::Reply, R::Reply),
    ) -> Result<(R::Reply, Vec<(String, String)>), ClientError>
    where
        R: Request,
    {
        let mut whole = self.call(make(None)).await?;
        let mut missing = Vec::new();
        for link in self.call(requests::ListHosts::default()).await? {
            if link.state != LinkState::Connected {
                let state = match link.state {
                    LinkState::Failed => "its link failed",
                    _ => "not connected yet",
                };
                let why = match &link.error {
                    Some(e) => format!("{state}: {e}"),
                    None => state.to_string(),
                };
                missing.push((link.name, why));
                continue;
            }
            match self.call(make(Some(link.name.clone()))).await {
                Ok(more) => merge(&mut whole, more),
                Err(ClientError::Remote {
                    code: ErrorCode::HostUnreachable,
                    message,
                    ..
                }) => missing.push((link.name, message)),
                Err(e) => return Err(e),
            }
        }
        Ok((whole, missing))
    }
}
