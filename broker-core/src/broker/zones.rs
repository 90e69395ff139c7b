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
//! - An offset read of a partition this node does not hold goes first to a replica in its
//!   zone ([`Broker::read_replica_near`]), which serves it as a follower when it is in sync
//!   (see `follower_reads`), and to the leader otherwise.
//!
//! A leader's zone is what the partition group's membership records for it (each node's
//! zone as the controller placed the replica) when this node holds a replica, and else what
//! the cluster metadata records for the leader's node ([`Broker::set_node_zones`]): so a
//! node that holds none of a partition's replicas knows whether its leader is near too.

use std::collections::BTreeMap;

use super::{Broker, Topic};
use crate::error::Result;
use crate::raft::leader_in_zone_of;
use crate::sync::{read, write};

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
        if self.replication.is_none() {
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
        let me = self.replication.as_ref().map(|r| r.node_id);
        let zones = read(&self.zones);
        let same_zone = |node: u64| {
            let zone = |n: u64| zones.get(&n);
            me.is_some_and(|me| zone(me).is_some() && zone(node) == zone(me))
        };
        topic
            .groups
            .iter()
            .map(|seat| {
                let leader = seat.leader();
                let near = match (me, leader) {
                    (Some(me), Some(leader)) => {
                        leader == me
                            || seat.raft().is_some_and(|raft| leader_in_zone_of(&raft, me))
                            || same_zone(leader)
                    }
                    _ => false,
                };
                LeaderNear { leader, near }
            })
            .collect()
    }

    /// Records each node's zone as the cluster metadata has it (node id to zone).
    pub fn set_node_zones(&self, zones: BTreeMap<u64, String>) {
        if *read(&self.zones) != zones {
            *write(&self.zones) = zones;
        }
    }

    /// For an offset read of `topic`'s partition `partition`, which this node does not hold:
    /// a replica in this node's zone to ask before the leader, when the leader is not in it
    /// (`None`: ask the leader; also on a single node, for a partition held here, or before
    /// the metadata placed it). A follower asked serves the read only when it is in sync,
    /// else it answers `NotLeader` and the read goes to the leader. Of several such
    /// replicas, the partition number chooses, so that reads spread over them.
    pub fn read_replica_near(&self, topic: &str, partition: u32) -> Option<u64> {
        let me = self.replication.as_ref()?.node_id;
        let open = self.topic(topic).ok()?;
        let seat = open.groups.get(partition as usize)?;
        if seat.held() {
            return None;
        }
        let zones = read(&self.zones);
        let my_zone = zones.get(&me)?;
        let near = |node: &u64| zones.get(node) == Some(my_zone);
        if seat.hint().is_some_and(|leader| near(&leader)) {
            return None;
        }
        let nearby: Vec<u64> = seat
            .replicas()
            .into_iter()
            .filter(|n| *n != me && near(n))
            .collect();
        let count = u32::try_from(nearby.len()).ok().filter(|c| *c > 0)?;
        nearby.get((partition % count) as usize).copied()
    }
}
