//! Telling the controller which partitions this node leads, so that the nodes outside a
//! partition's group know where to forward (see `broker::cluster`).

use std::sync::Weak;
use std::time::Duration;

use super::ClusterNode;
use crate::cluster::Command;

/// How often a node looks for leaderships of its own the metadata does not record yet: a
/// couple of heartbeats, a small part of the outage a new leader's election already costs
/// the nodes that forward to it.
const LEADER_REPORT_MS: u64 = 100;

impl ClusterNode {
    /// Reports to the controller each partition this node leads in a term the metadata
    /// does not record yet (see `broker::cluster`: the other nodes forward there).
    async fn report_leaders(&self) {
        let topics: Vec<(String, u64)> = self.controller.machine.read(|state| {
            state
                .topics()
                .iter()
                .map(|(name, record)| (name.clone(), record.config.uid))
                .collect()
        });
        let mut reports = Vec::new();
        for (name, uid) in topics {
            for (partition, term) in self.broker.led_partitions(&name, uid) {
                let recorded = self
                    .controller
                    .machine
                    .read(|state| state.partition_leader(&name, partition));
                if recorded.is_some_and(|l| l.node == self.node_id() && l.term >= term) {
                    continue;
                }
                reports.push(Command::SetPartitionLeader {
                    topic: name.clone(),
                    uid,
                    partition,
                    node: self.node_id(),
                    term,
                });
            }
        }
        for report in reports {
            if let Err(error) = self.propose_anywhere(&report).await {
                tracing::debug!(%error, "reporting a partition's leader; will retry");
            }
        }
    }
}

/// Reports the partitions this node leads every [`LEADER_REPORT_MS`], until the node is gone.
pub(super) async fn report_leaders_loop(node: Weak<ClusterNode>) {
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.report_leaders().await;
        }
        tokio::time::sleep(Duration::from_millis(LEADER_REPORT_MS)).await;
    }
}
