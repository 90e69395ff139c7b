//! The cluster port: where this node's Raft groups talk to other nodes' (never the public
//! port), and the client that talks to theirs.
//!
//! # Layout
//! - [`periodic`]: [`periodic::Periodic`], a background task taking one look every period
//!   until stopped (the probe keeper, preferred-leader election).
//! - `peer_auth`: the header every call carries, an HMAC of the caller's id and the time keyed
//!   by the cluster secret (the secret itself never travels), and its check.
//! - `port`: [`serve_cluster_port`]: `POST /cluster/v1/raft/{group}/{rpc}` handed to the
//!   broker's [`broker_core::raft::RpcHandler`] (and the alert evaluator's figures), behind
//!   the peer check, with the public edge's
//!   connection cap and timeouts.
//! - `lead_back`: [`LeadBackTask`], handing the partitions this node leads back to their
//!   preferred leaders (automatic preferred-leader election).
//! - `liveness`: [`Liveness`], when each other node was last heard from (either way).
//! - `node_start`: [`start_node`]: this process as a cluster node (cluster port bound, broker
//!   replicating, [`broker_core::cluster_node::ClusterNode`] started).
//! - `peer_client`: [`PeerClient`], the broker's [`broker_core::raft::Transport`] over pooled
//!   HTTP with a timeout on every call.

mod lead_back;
mod liveness;
mod node_start;
mod peer_auth;
mod peer_client;
pub(crate) mod periodic;
mod port;

pub use lead_back::{HAND_BACK_TIMEOUT_MS, LOOK_EVERY_MS, LeadBackTask};
pub use liveness::{LIVE_WITHIN, Liveness};
pub use node_start::{ClusterPort, StartedNode, start_node};
pub use peer_auth::{AUTH_HEADER, MAX_CLOCK_SKEW_MS, PeerAuth};
pub use peer_client::{CONNECT_TIMEOUT, PeerClient};
pub use port::{AlertsSlot, CLUSTER_DRAIN_TIMEOUT, cluster_router, serve_cluster_port};
