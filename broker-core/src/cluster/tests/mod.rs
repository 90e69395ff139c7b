//! Tests of the cluster state, its commands, placement and the planners.

mod fixtures;
mod json;
mod lead_back;
mod leaders;
mod nodes;
mod placement;
mod planner;
mod props;
mod subscriptions;
mod topics;
