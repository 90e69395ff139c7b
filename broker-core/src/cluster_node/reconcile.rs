//! Keeping the broker in step with the metadata: the reconciler opens the topics and
//! subscriptions the metadata lists and deletes those it no longer has after every applied
//! command, and replicas moved off this node are dropped once their group left it out.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::ClusterNode;
use crate::broker::{PartitionHint, PlacedPartition};
use crate::cluster::{ClusterState, TopicRecord};
use crate::raft::NodeInfo;

/// How often a node looks for replicas the metadata moved off it that it still holds: the
/// move's last step (the new configuration committing) follows the placement change, with
/// no metadata command to wake the reconciler; half a second keeps a moved replica's files
/// briefly at the cost of one metadata scan (in memory).
const RELEASE_CHECK_MS: u64 = 500;

impl ClusterNode {
    /// Brings the broker in line with the metadata: opens the topics placed here, deletes
    /// the topics the metadata no longer has.
    async fn reconcile(&self) {
        let state = self.state();
        // Deletions only once this process's own registration is applied: it was proposed
        // after the node started, so the metadata has then caught up with everything
        // committed before. Until then a restarted node's metadata is still being re-applied
        // from empty, and deleting what it does not list yet would destroy replicas.
        // Sticky: a later change of the record (a drain) does not make the metadata behind.
        let caught_up =
            self.caught_up.load(Ordering::SeqCst) || state.node(self.me.id) == Some(&self.me);
        self.caught_up.store(caught_up, Ordering::SeqCst);
        // Deletions first: a topic deleted and created again under the same name is a new
        // topic (another uid) whose files must not meet the old one's.
        for name in self.broker.topic_names().into_iter().filter(|_| caught_up) {
            let gone = match state.topic(&name) {
                None => true,
                Some(record) => self.broker.topic_uid(&name) != Some(record.config.uid),
            };
            if gone && let Err(error) = self.broker.delete_topic(&name).await {
                tracing::warn!(topic = %name, %error, "could not delete a topic");
            }
        }
        self.broker.set_node_zones(
            state
                .nodes()
                .values()
                .map(|n| (n.id, n.zone.clone()))
                .collect(),
        );
        // Every topic, placed here or not: a node holding none of a topic's partitions still
        // answers for it (forwarding to each partition's leader).
        for (name, record) in state.topics() {
            if let Err(error) = self
                .broker
                .materialize_placed_topic(
                    record.config.clone(),
                    replicas_of(&state, record),
                    &state.moved_partitions(name),
                )
                .await
            {
                tracing::warn!(topic = %name, %error, "could not open a topic");
            }
            let hints: Vec<PartitionHint> = (0u32..)
                .zip(&record.placement)
                .map(|(p, placed)| PartitionHint {
                    leader: state.partition_leader(name, p).map(|l| l.node),
                    replicas: placed.replicas.clone(),
                })
                .collect();
            self.broker
                .set_partition_hints(name, record.config.uid, &hints);
            self.reconcile_subscriptions(&state, name, caught_up).await;
        }
        // Only now: what the caught-up metadata lists is open here.
        self.broker.set_metadata_behind(!caught_up);
    }

    /// Brings a topic's subscriptions open here in line with the metadata.
    async fn reconcile_subscriptions(&self, state: &ClusterState, topic: &str, caught_up: bool) {
        for (name, uid) in self.broker.subscription_uids(topic) {
            let gone = state.subscription(topic, &name).map(|c| c.uid) != Some(uid);
            if gone
                && caught_up
                && let Err(error) = self.broker.delete_subscription(topic, &name).await
            {
                tracing::warn!(topic, subscription = %name, %error, "could not delete a subscription");
            }
        }
        for config in state.subscriptions(topic) {
            if self.broker.subscription_uid(topic, &config.name) == Some(config.uid) {
                continue;
            }
            if let Err(error) = self.broker.materialize_subscription(config.clone()).await {
                tracing::warn!(topic, subscription = %config.name, %error, "could not open a subscription");
            }
        }
    }

    /// Drops the replicas this node holds that the metadata places elsewhere, each once the
    /// partition's leader answers that its group left this node out
    /// ([`crate::broker::Broker::release_replica`]). Only once the metadata has caught up (`caught_up`, as
    /// for deletions).
    async fn release_moved_replicas(&self) {
        if !self.caught_up.load(Ordering::SeqCst) {
            return;
        }
        let state = self.state();
        let me = self.node_id();
        for (name, record) in state.topics() {
            for (partition, placed) in (0u32..).zip(&record.placement) {
                if placed.replicas.contains(&me) || !self.broker.holds_partition(name, partition) {
                    continue;
                }
                let released = self
                    .broker
                    .release_replica(name, record.config.uid, partition)
                    .await;
                if let Err(error) = released {
                    tracing::warn!(topic = %name, partition, %error, "could not drop a replica moved away");
                }
            }
        }
    }
}

/// Each partition's replicas, in partition order, with what the metadata knows of each.
fn replicas_of(state: &ClusterState, record: &TopicRecord) -> Vec<PlacedPartition> {
    record
        .placement
        .iter()
        .map(|p| PlacedPartition {
            members: p
                .replicas
                .iter()
                .map(|id| {
                    let info = state
                        .node(*id)
                        .map_or_else(NodeInfo::default, |n| NodeInfo {
                            cluster_addr: n.cluster_addr.clone(),
                            zone: n.zone.clone(),
                        });
                    (*id, info)
                })
                .collect(),
            preferred: p.preferred_leader(),
        })
        .collect()
}

/// Reconciles after every applied command, until the node is gone.
pub(super) async fn reconcile_loop(node: Weak<ClusterNode>) {
    let mut version = match node.upgrade() {
        Some(node) => node.controller.machine.version(),
        None => return,
    };
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.reconcile().await;
        }
        if version.changed().await.is_err() {
            return;
        }
    }
}

/// Drops replicas moved off this node every [`RELEASE_CHECK_MS`], until the node is gone.
pub(super) async fn release_loop(node: Weak<ClusterNode>) {
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.release_moved_replicas().await;
        }
        tokio::time::sleep(Duration::from_millis(RELEASE_CHECK_MS)).await;
    }
}
