//! # Held tool calls on the phone
//!
//! An `approval_changed` that opens an approval posts its card in the session's place
//! (once: a card already there is not posted again); one that decides or withdraws it
//! edits every card to say how and by whom. After a reconnect the cards are brought in
//! line with the core's list: a pending approval without a card gets one, a card whose
//! approval ended meanwhile is closed. A decision from the phone goes to the core as the
//! human who made it; the core's answer is the card's edit, and a refusal (decided
//! elsewhere first, withdrawn) is said where it was tried.

use shepherd_core::protocol::{Approval, ApprovalScope, ApprovalState};

use super::{Platform, Relay};
use crate::chat::approvals::{self, ApprovalRef};
use crate::chat::replies::plain;

impl<P: Platform> Relay<P> {
    /// An approval opened, was decided or withdrawn.
    pub(super) async fn approval_changed(&mut self, approval: Approval) {
        if approval.state != ApprovalState::Pending {
            let ended = approvals::ended(&approval);
            self.platform.close_approval(&approval, ended).await;
            return;
        }
        if self
            .platform
            .open_approvals()
            .contains(&ApprovalRef::of(&approval))
        {
            return; // Shown already (an event seen again after a resync).
        }
        let place = self.place_of(approval.session_id.as_str()).await;
        let card = approvals::card(&approval, P::APPROVAL_HINT);
        self.platform.post_approval(place, &approval, card).await;
    }

    /// After (re)connecting: a card for each pending approval, and the cards of the ones
    /// that ended meanwhile closed.
    pub(super) async fn resync_approvals(&mut self) {
        let all = match self.core.approvals(true).await {
            Ok(herd) => herd.items,
            Err(e) => {
                tracing::debug!(error = %e, "{}: could not list the approvals", P::NAME);
                return;
            }
        };
        let open = self.platform.open_approvals();
        for a in all {
            let shown = open.contains(&ApprovalRef::of(&a));
            if a.state == ApprovalState::Pending && !shown
                || a.state != ApprovalState::Pending && shown
            {
                self.approval_changed(a).await;
            }
        }
    }

    /// The human decided approval `id` here (`place`): allow (`scope`) or deny (with
    /// `reason`). Returns what to tell them when the core refused it.
    pub async fn decide_approval(
        &mut self,
        id: ApprovalRef,
        allow: bool,
        scope: ApprovalScope,
        reason: Option<&str>,
        by: &str,
        place: Option<P::Place>,
    ) -> Option<String> {
        match self
            .core
            .decide_approval(&id, allow, scope, reason, by)
            .await
        {
            // The card's edit (from the approval_changed event) is the confirmation.
            Ok(_) => None,
            Err(e) => {
                let said = approvals::refused(&e);
                self.say(place, plain(said.clone())).await;
                Some(said)
            }
        }
    }
}
