//! The cluster port: where this node's Raft groups talk to other nodes' (never the public
//! port), and the client that talks to theirs.
//!
//! # Layout
//! - [`periodic`]: [`periodic::Periodic`], a background task taking one look every period
//!   until stopped (the probe keeper, preferred-leader election).
//! - `peer_auth`: the header every call carries, an HMAC of the caller's id and the time keyed
//!   by the cluster secret (the secret itself never travels), and its check.
//! - `port`: [`serve_cluster_port`]: peer connections (`peer_session`) and `POST
//!   /cluster/v1/raft/{group}/{rpc}` handed to the broker's
//!   [`broker_core::raft::RpcHandler`] (and the alert evaluator's figures), behind the peer
//!   check, with the public edge's connection cap and timeouts.
//! - `lead_back`: [`LeadBackTask`], handing the partitions this node leads back to their
//!   preferred leaders (automatic preferred-leader election).
//! - `liveness`: [`Liveness`], when each other node was last heard from (either way).
//! - `node_start`: [`start_node`]: this process as a cluster node (cluster port bound, broker
//!   replicating, [`broker_core::cluster_node::ClusterNode`] started).
//! - `peer_client`: [`PeerClient`], the broker's [`broker_core::raft::Transport`]: one
//!   connection per node, a timeout on every call.
//! - `peer_connection`: the calling side of a peer connection: many calls at once on one
//!   TCP connection, pings when it is silent, unreachable told from lost when it ends.
//! - `peer_http`: one call per HTTP request, for a node that does not upgrade (an earlier
//!   version, during a rolling upgrade).
//! - `peer_frame`: the frames on a peer connection (requests, answers, pings), encoded and
//!   taken off a read buffer.
//! - `peer_session`: the answering side: `POST /cluster/v1/peer` upgraded, each request to
//!   the node's groups, answers written as they are ready.

mod lead_back;
mod liveness;
mod node_start;
mod peer_auth;
mod peer_client;
mod peer_connection;
mod peer_frame;
mod peer_http;
mod peer_session;
pub(crate) mod periodic;
mod port;

pub use lead_back::{HAND_BACK_TIMEOUT_MS, LOOK_EVERY_MS, LeadBackTask};
pub use liveness::{LIVE_WITHIN, Liveness};
pub use node_start::{ClusterPort, StartedNode, start_node};
pub use peer_auth::{AUTH_HEADER, MAX_CLOCK_SKEW_MS, PeerAuth};
pub use peer_client::{CONNECT_TIMEOUT, PeerClient};
pub use peer_session::{PEER_PATH, PEER_PROTOCOL};
pub use port::{AlertsSlot, CLUSTER_DRAIN_TIMEOUT, serve_cluster_port};
