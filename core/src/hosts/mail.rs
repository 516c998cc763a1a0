//! Mail down a link: the home core's mail for a linked host (`deliver_host_mail`), each
//! under an id of the link's own; the far core's `host_mail_stored` (or its refusal) goes
//! back to the hub as [`LinkNews`]. Mail still waiting when the link drops stays kept in
//! the home core's store, which hands all of it to the link again when it is back (the far
//! core stores each mail once).

use std::collections::HashMap;

use super::LinkNews;
use crate::protocol::{ClientMsg, ErrorCode, HostMail, ServerMsg, requests};

/// The first id a link gives a mail request (below: its own calls and forwarded requests).
const FIRST_ID: u64 = 1 << 41;

/// One link's mail requests that wait for the far core.
pub(super) struct MailBag {
    /// This link's request id → the mail's id.
    waiting: HashMap<u64, u64>,
    next_id: u64,
    /// This core's `store_id`: the far core stores each mail of this origin once.
    origin: String,
}

impl MailBag {
    pub(super) fn new(origin: String) -> MailBag {
        MailBag {
            waiting: HashMap::new(),
            next_id: FIRST_ID,
            origin,
        }
    }

    /// `mail` as the request that stores it there, now waiting for its answer.
    pub(super) fn outgoing(&mut self, mail: HostMail) -> ClientMsg {
        let id = self.next_id;
        self.next_id += 1;
        self.waiting.insert(id, mail.id);
        ClientMsg::DeliverHostMail(requests::DeliverHostMail {
            id,
            ..requests::DeliverHostMail::of(&self.origin, mail)
        })
    }

    /// If `msg` answers a mail request: what the hub should do about it (`None` inside
    /// when the mail stays kept: the far core failed, not refused, so it goes again).
    pub(super) fn answered(&mut self, host: &str, msg: &ServerMsg) -> Option<Option<LinkNews>> {
        let mail_id = self.waiting.remove(&msg.response_id()?)?;
        let host = host.to_string();
        Some(match msg {
            ServerMsg::HostMailStored { .. } => Some(LinkNews::Stored { host, id: mail_id }),
            ServerMsg::Error { code, message, .. } if refused_for_good(*code) => {
                Some(LinkNews::Refused {
                    host,
                    id: mail_id,
                    why: message.clone(),
                })
            }
            _ => None,
        })
    }

    /// The link dropped: nothing waits any more (the store still keeps the mail).
    pub(super) fn dropped(&mut self) {
        self.waiting.clear();
    }
}

/// Whether the far core's refusal is its decision (the mail is not for it to store), not
/// a failure that sending again may mend.
fn refused_for_good(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Forbidden | ErrorCode::UnknownSession | ErrorCode::InvalidArgument
    )
}
