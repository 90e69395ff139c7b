//! Zones in a cluster (`--zone`): traffic stays in the receiving node's zone when it can, as
//! the seed's dual-centre deployment did (nearby produce and consume).
//!
//! - An unkeyed message produced here goes to a partition this node leads; when it leads
//!   none, to one led in its zone; when no partition is led in its zone, to every partition
//!   in turn ([`Broker::unkeyed_partitions`]). A keyed message always goes to its key's
//!   partition, wherever that is led: per-key order outranks nearness.
//! - A receive gathered from several leaders asks those in this node's zone first and the
//!   others only when the nearby ones had too little ([`Broker::partition_leaders_near`]).
//!
//! A leader's zone is what the partition group's membership records for it (each node's
//! zone as the controller placed the replica).

use super::{Broker, Topic};
use crate::error::Result;
use crate::raft::leader_in_zone_of;

/// A partition's leader as this node knows it, and whether it is in this node's zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderNear {
    /// The leader (none during an election).
    pub leader: Option<u64>,
    /// Whether the leader is this node or in this node's zone.
    pub near: bool,
}

impl Broker {
    /// The partitions an unkeyed message produced on this node goes to (in turn): those it
    /// leads, else those led in its zone, else none (every partition in turn). None on a
    /// single node.
    pub(super) fn unkeyed_partitions(&self, topic: &Topic) -> Vec<u32> {
        if self.config.replication.is_none() {
            return Vec::new(); // A single node's produce path allocates nothing here.
        }
        let led_here = self.partitions_led_here(topic);
        if !led_here.is_empty() {
            return led_here;
        }
        self.leaders_near(topic)
            .into_iter()
            .zip(0u32..)
            .filter(|(leader, _)| leader.near)
            .map(|(_, partition)| partition)
            .collect()
    }

    /// The partitions an unkeyed message of topic `name` produced on this node goes to (in
    /// turn): those it leads, else those led in its zone, else none (every partition in
    /// turn); for a gateway splitting a batch.
    pub fn unkeyed_partitions_of(&self, name: &str) -> Result<Vec<u32>> {
        let open = self.topic(name)?;
        Ok(self.unkeyed_partitions(&open))
    }

    /// For each partition of `topic`: its leader as this node knows it and whether that
    /// leader is near (this node or its zone). All leaders `None` on a single node.
    pub fn partition_leaders_near(&self, topic: &str) -> Result<Vec<LeaderNear>> {
        let open = self.topic(topic)?;
        Ok(self.leaders_near(&open))
    }

    fn leaders_near(&self, topic: &Topic) -> Vec<LeaderNear> {
        let me = self.config.replication.as_ref().map(|r| r.node_id);
        topic
            .groups
            .iter()
            .map(|seat| {
                let leader = seat.leader();
                let near = match (me, seat.raft()) {
                    (Some(me), Some(raft)) => leader == Some(me) || leader_in_zone_of(raft, me),
                    _ => false,
                };
                LeaderNear { leader, near }
            })
            .collect()
    }
}
