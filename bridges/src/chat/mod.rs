//! # The chat-agnostic layer
//!
//! Everything a bridge says or understands that does not depend on the platform. A
//! bridge turns these into Telegram messages or Matrix events.
