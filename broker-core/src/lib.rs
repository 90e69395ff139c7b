//! Wharf's embedded broker: durable partitioned logs, topics, subscriptions with leases.
//!
//! # Layout
//! - [`Broker`] (`broker`): the one facade the gateway calls: topics, produce, subscriptions,
//!   receive/ack/nack/extend, offset reads. It speaks domain types and [`BrokerError`].
//! - `storage`: per-partition segment files of CRC-framed batches, the sled index, the
//!   writer thread per partition ([`storage::PartitionHandle`]).
//! - `topic`: topic specs, validation and the in-memory registry of open topics.
//! - `subscription`: subscription specs, the pure lease table ([`subscription::LeaseTable`]:
//!   leases, retries, key order, filters, dead letters), MAC'd receipts, attempt ids, and
//!   their persistence in sled.
//! - `control`: which layer owns a control entry of a partition log, by its kind byte.
//! - `schedule`: the schedule of delayed messages ([`schedule::DelayStore`]), derived from
//!   the schedule events of the partition logs ([`schedule::ScheduleEvent`]).
//! - `dedup`: the window of client-chosen message ids ([`dedup::DedupIndex`]); `in_flight`:
//!   the ids of produces under way ([`in_flight::InFlightIds`]); `derived_position`: how far
//!   those derived tables have applied each partition's log, and how they write it.
//! - `cluster_node`: [`cluster_node::ClusterNode`], a cluster node at run time: the
//!   controller replica, the node's registration, and the reconciler that opens and deletes
//!   topics as the cluster metadata says.
//! - `raft`: replication between nodes: the [`raft::Transport`] and [`raft::RpcHandler`] seam
//!   the gateway carries over the cluster port.
//! - `cluster`: the controller's state ([`cluster::ClusterState`]: nodes, topics and their
//!   replica placement, subscriptions), the commands that change it, placement and the
//!   drain and leader-balance planners. Pure: no I/O, no Raft.
//! - `history`: per-minute history of topics and subscriptions, pure: the
//!   [`history::MinuteAggregator`] that turns samples into minutes, the bounded
//!   [`history::MinuteRing`], the records' checksummed byte form and the rankings.
//! - `trace_index`: where a partition's log holds each message by id and key and the events
//!   about it, pure: [`trace_index::RunBuilder`] and the checksummed runs it seals.
//! - `telemetry`: the metrics the broker records (names are API for dashboards).
//! - `memory`: the budget of bytes held for requests and answers ([`memory::MemoryBudget`]).
//! - `trace_context`: the W3C trace context a message carries ([`TraceContext`]).
//! - `names`, `tags`, `limits`, `config`, `message`, `error`, `clock`: the vocabulary shared
//!   by all; `sync`: locks that stay usable after a holder panicked ([`sync::lock`]).
//!
//! The broker never depends on HTTP types.

pub mod broker;
pub mod clock;
pub mod cluster;
pub mod cluster_node;
pub mod config;
pub mod control;
pub mod dedup;
pub mod derived_position;
pub mod disk_space;
pub mod error;
pub mod history;
pub mod in_flight;
pub mod limits;
pub mod memory;
pub mod message;
pub mod names;
pub mod partitioner;
pub mod raft;
pub mod schedule;
pub mod storage;
pub mod subscription;
pub mod sync;
pub mod tags;
pub mod telemetry;
pub mod topic;
pub mod trace_context;
pub mod trace_index;
pub mod trace_store;

pub use broker::Broker;
pub use config::{BrokerConfig, FsyncPolicy, LogConfig};
pub use error::{BrokerError, Result};
pub use message::{Origin, Record, StoredRecord};
pub use trace_context::TraceContext;
