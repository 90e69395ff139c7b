//! Replication: how Wharf's Raft groups (one per partition, one controller) reach each other.
//!
//! # Layout
//! - `transport`: the seam between the groups and the wire: a [`Transport`] sends one RPC's
//!   bytes to a node and brings its answer back; an [`RpcHandler`] answers RPC bytes for the
//!   groups of this node. The gateway carries them over HTTP on the cluster port, tests in
//!   memory. Group ids ([`GroupId`]) name the controller or one topic partition.
//!
//! The broker never depends on HTTP types: RPCs are bytes here.

mod log_store;
mod state_machine;
mod transport;
mod types;

pub use log_store::LogStore;
pub use state_machine::PartitionMachine;
pub use transport::{
    GroupId, HandlerFuture, MAX_RPC_BYTES, Rpc, RpcCall, RpcError, RpcHandler, Transport,
    TransportError, TransportFuture,
};
pub use types::{Applied, META_BLANK, META_MEMBERSHIP, NodeInfo, TypeConfig};
