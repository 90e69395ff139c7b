//! Alerts (issue 12): rules an operator creates over the API, evaluated on the node, whose
//! firing and resolved events are posted, signed, to a webhook. This module is the pure core:
//! no routes, no storage, no clock and no I/O; the server wires it.
//!
//! # Layout
//! - [`rule`]: [`AlertRule`] as the API takes it, its [`AlertKind`]s and every bound on its
//!   fields; [`AlertRule::validate`] freezes it into a [`ValidRule`].
//! - [`webhook_policy`]: [`WebhookPolicy`], where webhooks may go (`http(s)` only, no user
//!   name, the operator's allow-list of [`HostPattern`]s).
//! - [`evaluation`]: [`RuleEvaluator`], the `ok → pending → firing → ok` state machine of one
//!   rule over [`Sample`]s, emitting each [`AlertEvent`] once.
//! - [`per_minute`]: [`PerMinuteRate`], a cumulative counter into its count of the last
//!   minute (the value of `dead_letters` and `produce_errors`).
//! - [`event_body`]: [`AlertEventBody`], the JSON a webhook receives.
//! - [`signature`]: [`WebhookSigner`], the `Wharf-Signature` header (Stripe's scheme).
//! - [`delivery_schedule`]: [`RetrySchedule`], when a failed post is retried or dropped.
//! - [`delivery_queue`]: [`DeliveryQueue`], the bounded queue in front of the sender.
//! - [`error`]: [`AlertError`], the module's one error.

pub mod delivery_queue;
pub mod delivery_schedule;
pub mod error;
pub mod evaluation;
pub mod event_body;
pub mod per_minute;
pub mod rule;
pub mod signature;
pub mod webhook_policy;

pub use delivery_queue::DeliveryQueue;
pub use delivery_schedule::{NextAttempt, RetrySchedule};
pub use error::AlertError;
pub use evaluation::{AlertEvent, RuleEvaluator, RuleState, Sample};
pub use event_body::{AlertEventBody, EventState};
pub use per_minute::PerMinuteRate;
pub use rule::{AlertKind, AlertRule, ValidRule};
pub use signature::WebhookSigner;
pub use webhook_policy::{HostPattern, WebhookPolicy};
