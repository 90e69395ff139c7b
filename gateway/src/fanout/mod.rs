//! The cluster fan-out: any node serves any request, but in a cluster a request that one node
//! cannot answer alone (its partitions, or their live figures, are held elsewhere) is
//! forwarded to a leader, gathered from several leaders, or scattered to them, and the
//! answers are merged into one reply. Every hop carries the client's credentials and
//! `Wharf-Forwarded`, so it is checked again there and never travels further.
//!
//! - [`forward`]: a request this node answers `not_leader` is sent on to the leader the error names.
//! - [`gather`]: a receive gathers from each partition's leader; an ack, nack or extend goes to its own.
//! - [`gather_looks`]: what a node remembers, per subscription, of each other leader's last answer.
//! - [`scatter`]: a JSON produce batch split by leader, each share produced there, one reply.
//! - [`topic_stats`]: a topic's per-partition stats, asked of the leaders of partitions held elsewhere.
//! - [`subscription_figures`]: a subscription's stats summed over its partitions' leaders.
//! - [`ask_leader`]: asking a partition's leader for figures only it has live (one `GET`).
//! - [`trace_gather`]: a message lookup asks the holders of the partitions this node lacks.
//! - [`peer`]: one call to another node of the cluster on a client's behalf.

pub(crate) mod ask_leader;
pub mod forward;
pub(crate) mod gather;
pub(crate) mod gather_looks;
pub(crate) mod peer;
pub(crate) mod scatter;
pub(crate) mod subscription_figures;
pub(crate) mod topic_stats;
pub(crate) mod trace_gather;
