//! HTTP handlers, one file per resource; their request and reply types are in [`crate::api`].

pub mod alerts;
pub mod cluster;
pub mod cluster_admin;
pub mod console;
pub mod consume;
pub mod dead_letters;
pub mod delays;
pub mod docs;
pub mod health;
pub mod metrics;
pub mod partitions;
pub mod produce;
pub mod seek;
pub mod stats;
pub mod stream;
pub mod subscriptions;
pub mod topics;
pub mod trace;
