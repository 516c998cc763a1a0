//! Idempotency keys: a session may label an `ask`, a `report` or a run's result with a
//! key, so that sending it again (after a reconnect, say) finds the first instead of
//! making a second. Asks and reports check a key the same way.

use super::{HubError, HubResult};
use crate::protocol::ErrorCode;

/// An idempotency key is 1-128 characters without control characters.
pub(super) fn check_key(key: Option<&str>) -> HubResult<()> {
    match key {
        Some(k) if k.is_empty() || k.chars().count() > 128 || k.chars().any(char::is_control) => {
            Err(HubError::new(
                ErrorCode::InvalidArgument,
                "key must be 1-128 characters without control characters",
            ))
        }
        _ => Ok(()),
    }
}
