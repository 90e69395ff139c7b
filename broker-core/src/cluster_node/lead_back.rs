//! What automatic preferred-leader election ([`crate::cluster::lead_back`]) needs of a node:
//! the partitions it leads with its followers' lag, and handing one to another replica
//! without the controller (the partition's leader decides; a leadership move needs no
//! metadata change).

use super::ClusterNode;
use super::admin::LeaderMoved;
use crate::cluster::ClusterState;
use crate::cluster::lead_back::Led;
use crate::error::{BrokerError, Result};

impl ClusterNode {
    /// The partitions of `state`'s topics this node leads now, each with how many entries
    /// each other voter lags its log.
    pub fn led_partitions(&self, state: &ClusterState) -> Vec<Led> {
        let me = self.node_id();
        let mut led = Vec::new();
        for (topic, record) in state.topics() {
            for partition in 0..record.placement.len() as u32 {
                let Some(status) = self.broker.partition_status(topic, partition) else {
                    continue;
                };
                if status.leader != Some(me) {
                    continue;
                }
                let lag = status
                    .voters
                    .iter()
                    .filter(|v| **v != me)
                    .filter_map(|v| Some((*v, status.lag(*v)?)))
                    .collect();
                led.push(Led {
                    topic: topic.clone(),
                    partition,
                    lag,
                });
            }
        }
        led
    }

    /// Hands the leadership of `topic`'s partition `partition`, which this node leads, to
    /// replica `to` (see `raft::transfer`); [`BrokerError::NotLeader`] when this node does
    /// not lead it (any more).
    pub async fn hand_leadership(
        &self,
        topic: &str,
        partition: u32,
        to: u64,
    ) -> Result<LeaderMoved> {
        let status = self.broker.partition_status(topic, partition);
        let me = self.node_id();
        if status.as_ref().and_then(|s| s.leader) != Some(me) {
            return Err(BrokerError::NotLeader {
                what: format!("partition {partition} of topic '{topic}'"),
                leader: status.and_then(|s| s.leader),
            });
        }
        let replicas = self
            .state()
            .topic(topic)
            .and_then(|t| t.placement.get(partition as usize))
            .map(|p| p.replicas.clone())
            .unwrap_or_default();
        self.transfer(topic, partition, &replicas, to).await
    }
}
