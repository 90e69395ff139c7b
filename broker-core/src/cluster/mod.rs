//! The controller's state: cluster metadata as a pure, deterministic state machine.
//!
//! A controller Raft group over the voters orders [`Command`]s; every node applies every
//! committed command, in order, to its own [`ClusterState`] with [`ClusterState::apply`],
//! and all copies stay equal because applying is deterministic and a refused command
//! changes nothing. Nothing here does I/O; only `replicated` knows the controller group (it
//! is the state's adapter to it).
//!
//! # Layout
//! - `node`: [`NodeRecord`] and its [`NodeState`].
//! - `state`: [`ClusterState`] (nodes, topics with their placements, subscriptions, the
//!   leaders partitions reported; the controller's snapshot) and its invariants ([`ClusterState::validate`]).
//! - `command`: [`Command`], the controller log's entries; `apply`: the rules that accept or
//!   refuse each.
//! - `placement`: [`place`], where a new topic's replicas and preferred leaders go, and
//!   [`default_replication_factor`].
//! - `planner`: [`plan_drain`] and [`plan_leader_balance`], what the controller leader
//!   proposes to empty a node or even out leaders.
//! - `lead_back`: [`lead_back::LeadBack`], when a partition's leadership goes back to its
//!   preferred leader on its own (automatic preferred-leader election).
//! - `replicated`: the state as the controller group's replicated metadata (commands as
//!   JSON, applied in log order: [`encode_command`]).
//! - [`ClusterError`] (in `crate::error`, below everything): one variant per refusal.

mod apply;
mod command;
pub mod lead_back;
mod node;
mod placement;
mod planner;
mod replicated;
mod state;

pub use crate::error::{ClusterError, PlacementFault};
pub use crate::topic::{DEFAULT_REPLICATION_FACTOR, default_replication_factor};
pub use command::Command;
pub use node::{NodeRecord, NodeState};
pub use placement::{PartitionPlacement, PlacementLoad, place, place_led_by};
pub use planner::{LeaderMove, plan_drain, plan_leader_balance};
pub use replicated::encode_command;
pub use state::{ClusterState, PartitionLeader, TopicRecord};

#[cfg(test)]
mod tests;
