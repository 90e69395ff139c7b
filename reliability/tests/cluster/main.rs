//! Cluster behaviour against real `wharf` processes (three nodes, five in `five`): admin
//! routes, alerts, consuming across nodes, a replication factor below the node count, a receive
//! while a leader hangs, per-minute history, metrics, redriving dead letters. The tests that ran
//! alone (or one at a time) before the areas were merged hold `serial::CLUSTERS` for writing,
//! the short ones that ran in pairs (`admin`, `gather_stall`, `metrics`) for reading.

#[path = "../support/api_calls.rs"]
mod api_calls;
#[path = "../support/serial.rs"]
mod serial;

mod admin;
mod alerts;
mod consume;
mod five;
mod gather_stall;
mod history;
mod metrics;
mod redrive;
