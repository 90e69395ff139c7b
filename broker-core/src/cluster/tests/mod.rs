//! Tests of the cluster state, its commands, placement and the planners.

mod fixtures;
mod nodes;
mod subscriptions;
mod topics;
