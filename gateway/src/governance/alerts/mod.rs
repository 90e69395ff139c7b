//! Alerts (issue 12): rules an operator creates over the API, evaluated on the node (in a
//! cluster, on the controller leader alone), whose firing and resolved events are posted,
//! signed, to a webhook. Most of this module is the
//! pure core (no storage, no clock, no I/O); [`runtime`], [`book`], [`watcher`] and
//! [`outbox`] wire it to the broker and the network, and `routes::alerts` serves it.
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
//! - [`runtime`]: [`Alerts`], what a node's routes, evaluator and sender share, and the two
//!   tasks' start and stop.
//! - [`book`]: [`RuleBook`], the rules, written through to the broker's metadata store (the
//!   cluster metadata on a cluster node).
//! - [`cluster_figures`]: on a cluster node, the figures the evaluating node (the controller
//!   leader) gathers from every node, and each node's answer.
//! - [`watcher`]: the evaluation task: samples every rule each tick, publishes
//!   [`ActiveAlert`]s.
//! - [`outbox`]: the sender task behind the bounded [`Outbox`].
//!
//! The `produce_errors` kind reads the node's one produce error counter,
//! [`crate::governance::produce_errors::ProduceErrors`], which the per-minute history reads too.

pub mod book;
pub(crate) mod cluster_figures;
pub(crate) mod delivery_queue;
pub(crate) mod delivery_schedule;
pub(crate) mod error;
pub(crate) mod evaluation;
pub(crate) mod event_body;
pub(crate) mod outbox;
pub(crate) mod per_minute;
pub(crate) mod rule;
pub(crate) mod runtime;
pub(crate) mod signature;
pub(crate) mod watcher;
pub(crate) mod webhook_policy;

pub use book::RuleBook;
pub use delivery_queue::DeliveryQueue;
pub use delivery_schedule::{NextAttempt, RetrySchedule};
pub use error::AlertError;
pub use evaluation::{AlertEvent, RuleEvaluator, RuleState, Sample};
pub use event_body::{AlertEventBody, EventState};
pub use outbox::Outbox;
pub use per_minute::PerMinuteRate;
pub use rule::{AlertKind, AlertRule, ValidRule};
pub use runtime::{AlertTasks, Alerts};
pub use signature::WebhookSigner;
pub use watcher::ActiveAlert;
pub use webhook_policy::{HostPattern, WebhookPolicy};
