//! Cluster tests: the cluster port and its peer client (one connection carrying many calls,
//! cut, silent and stopped peers), and three in-process nodes talking real
//! HTTP and replicating over the real cluster port (a produce's origin across a forward, the
//! message trace on nodes lacking partitions, synthetic probes and their alerts).

#[path = "../support/mod.rs"]
pub mod support;

mod cluster_common;

mod cluster_origin;
mod cluster_port;
mod cluster_probes;
mod cluster_trace;
mod peer_connections;
