//! Alerts (issue 12): rules an operator creates over the API, evaluated on the node, whose
//! firing and resolved events are posted, signed, to a webhook. This module is the pure core:
//! no routes, no storage, no clock and no I/O; the server wires it.
//!
//! # Layout
//! - [`rule`]: [`AlertRule`] as the API takes it, its [`AlertKind`]s and every bound on its
//!   fields; [`AlertRule::validate`] freezes it into a [`ValidRule`].
//! - [`webhook_policy`]: [`WebhookPolicy`], where webhooks may go (`http(s)` only, no user
//!   name, the operator's allow-list of [`HostPattern`]s).
//! - [`error`]: [`AlertError`], the module's one error.

pub mod error;
pub mod rule;
pub mod webhook_policy;

pub use error::AlertError;
pub use rule::{AlertKind, AlertRule, ValidRule};
pub use webhook_policy::{HostPattern, WebhookPolicy};
