//! The broker on a single node, through its facade (`broker_core::Broker`): produce, the
//! subscription state and derived tables the partition logs hold, origins, alert rules, the
//! start on a folder another run left, and lookups through the trace index.
//!
//! One test binary: each file below was a binary of its own.

mod alert_rules;
mod consumer_events;
mod derived_tables;
mod origin;
mod produce;
mod startup;
mod subscription_state;
mod support;
mod trace;
mod trace_bounds;
