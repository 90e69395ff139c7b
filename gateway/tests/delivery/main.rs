//! Delivery over real HTTP on a single node: produce, receive, ack and redelivery; tag
//! filters, idempotent produce, delayed messages, seek, retries, dead letters and redrive,
//! key ordering; server-sent event streams; trace context carried on every delivery path; and
//! the subscription events that name each consumer.

#[path = "../support/mod.rs"]
pub mod support;

mod restartable;

mod consumer_events;
mod delivery;
mod delivery_semantics;
mod delivery_semantics_bad_input;
mod delivery_semantics_dead_letters;
mod sse;
mod trace_context;
