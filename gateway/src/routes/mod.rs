//! HTTP handlers, one file per resource; their request and reply types are in [`crate::api`].

pub(crate) mod alerts;
pub(crate) mod cluster;
pub(crate) mod cluster_admin;
pub(crate) mod console;
pub(crate) mod consume;
pub(crate) mod dead_letters;
pub(crate) mod delays;
pub(crate) mod docs;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod partitions;
pub mod produce;
pub(crate) mod seek;
pub(crate) mod stats;
pub mod stream;
pub(crate) mod subscriptions;
pub(crate) mod topics;
pub(crate) mod trace;
