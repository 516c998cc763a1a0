//! The bridges' side of the hub: `subscribe` (with the bot a bridge serves, one bridge
//! per bot) and the broadcast of an event to every subscriber.

use crate::hub::{Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::Subscribe;
use crate::protocol::{ClientKind, ErrorCode, ServerMsg};

impl State {
    pub(in crate::hub) fn subscribe(
        &mut self,
        cx: Cx,
        req: Subscribe,
        out: &mut Out,
    ) -> HubResult<()> {
        if let Some(bot) = req.serves {
            self.claim_bot(cx, bot)?;
        }
        self.presence.subscribers.insert(cx.conn);
        out.send(cx.conn, &ServerMsg::Subscribed { id: cx.id });
        Ok(())
    }

    /// Bind `bot` to this bridge connection, unless another live connection serves it.
    fn claim_bot(&mut self, cx: Cx, bot: String) -> HubResult<()> {
        if cx.kind != ClientKind::Bridge {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only a bridge serves a bot; subscribe without `serves`",
            ));
        }
        let bot = bot.trim().to_string();
        if bot.is_empty() || bot.len() > 256 {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "serves must name the bot in 1 to 256 bytes (telegram:@name, matrix:@user:server)",
            ));
        }
        let holder = self
            .presence
            .conns
            .iter()
            .find(|(id, c)| **id != cx.conn && c.serves.as_deref() == Some(bot.as_str()));
        if let Some((_, holder)) = holder {
            let h = &holder.handle;
            let pid = h
                .pid
                .map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
            return Err(HubError::new(
                ErrorCode::AlreadyServed,
                format!(
                    "{bot} is already served by the bridge `{}` ({pid}, connected {}); \
                     one bot takes one bridge: stop that one first (`shepherd status` lists bridges)",
                    h.client_name,
                    crate::human::ago(h.connected_at, crate::clock::now_ms()),
                ),
            ));
        }
        if let Some(conn) = self.presence.conns.get_mut(&cx.conn) {
            conn.serves = Some(bot);
        }
        Ok(())
    }
}
