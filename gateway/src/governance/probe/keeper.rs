//! Probes in a cluster: each node probes its own one-partition topic
//! (`__wharf.probe.<node id>`, [`node_probe_topic`]) while it leads that partition, so a
//! round checks the node's own storage, its produce path with replication to a quorum
//! (`ack=all`), delivery and settling.
//!
//! Topics are cluster metadata, made only by the controller leader: [`ProbeKeeper`] runs on
//! every node and, on the one leading the controller, every [`KEEP_EVERY_MS`]
//! - makes the probe topic of every Active node that has none, with that node as its
//!   preferred leader, and its [`PROBE_SUBSCRIPTION`] (dead letters, which never come, go
//!   to one shared [`PROBE_DEAD_LETTERS`] topic rather than a topic per node);
//! - moves a probe partition's leadership back to its node once that node is live again
//!   (a restarted node's partition was led by another meanwhile);
//! - deletes the probe topics of nodes no longer in the metadata.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::cluster_node::ClusterNode;

use super::round::{PROBE_SUBSCRIPTION, PROBE_TOPIC, probe_subscription_spec, probe_topic_spec};
use crate::cluster::periodic::{Look, Periodic};
use crate::cluster::{LIVE_WITHIN, Liveness};

/// How often the keeper looks: a new node's probe starts within this of its registration,
/// a restarted node's within this of being live again.
pub(crate) const KEEP_EVERY_MS: u64 = 2_000;
/// Longest one metadata change of the keeper may take (a create, a delete, a leadership
/// move): past it the keeper tries again at a later look.
pub(crate) const KEEP_STEP_TIMEOUT_MS: u64 = 10_000;
/// The dead-letter topic of every node's probe subscription in a cluster.
pub(crate) const PROBE_DEAD_LETTERS: &str = "__wharf.probe.dlq";

/// The probe topic of node `node` in a cluster.
pub fn node_probe_topic(node: u64) -> String {
    format!("{PROBE_TOPIC}.{node}")
}

/// The node whose probe topic `name` is, if it is one.
pub(crate) fn probe_topic_owner(name: &str) -> Option<u64> {
    let rest = name.strip_prefix(PROBE_TOPIC)?.strip_prefix('.')?;
    match rest.bytes().all(|b| b.is_ascii_digit()) {
        true => rest.parse().ok(),
        false => None,
    }
}

/// The keeper of one node (it acts only while the node leads the controller).
#[derive(Debug)]
pub struct ProbeKeeper(Periodic);

impl ProbeKeeper {
    /// Starts keeping the probe topics of `node`'s cluster; `liveness` says which nodes are
    /// live (a leadership is moved only to a live node).
    pub fn start(node: Arc<ClusterNode>, liveness: Liveness) -> ProbeKeeper {
        let every = Duration::from_millis(KEEP_EVERY_MS);
        ProbeKeeper(Periodic::start(every, Keeper { node, liveness }))
    }

    /// Stops the keeper after the look under way (each of its steps is bounded by
    /// [`KEEP_STEP_TIMEOUT_MS`]) and waits for it.
    pub async fn stop(self) {
        self.0.stop().await;
    }
}

struct Keeper {
    node: Arc<ClusterNode>,
    liveness: Liveness,
}

impl Look for Keeper {
    async fn look(&mut self) {
        keep_once(&self.node, &self.liveness).await;
    }
}

/// Runs one metadata change under [`KEEP_STEP_TIMEOUT_MS`]; a failure is logged, not
/// returned: the next look tries again.
async fn step<T>(what: &str, topic: &str, change: impl Future<Output = Result<T, BrokerError>>) {
    match tokio::time::timeout(Duration::from_millis(KEEP_STEP_TIMEOUT_MS), change).await {
        Ok(
            Ok(_) | Err(BrokerError::TopicExists { .. } | BrokerError::SubscriptionExists { .. }),
        ) => {}
        Ok(Err(error)) => tracing::warn!(%error, topic, "the probe keeper could not {what}"),
        Err(_) => tracing::warn!(topic, "the probe keeper could not {what} in time"),
    }
}

/// One look (see the module's documentation); nothing unless `node` leads the controller.
async fn keep_once(node: &ClusterNode, liveness: &Liveness) {
    if node.controller_leader() != Some(node.node_id()) || !node.ready() {
        return;
    }
    let state = node.state();
    for record in state.nodes().values() {
        let topic = node_probe_topic(record.id);
        if state.topic(&topic).is_none() {
            if !record.is_active() {
                continue;
            }
            let created = node.create_topic_led_by(probe_topic_spec(&topic), record.id);
            step("make a probe topic", &topic, created).await;
        }
        if node
            .state()
            .subscription(&topic, PROBE_SUBSCRIPTION)
            .is_none()
        {
            let spec = probe_subscription_spec(Some(PROBE_DEAD_LETTERS.to_owned()));
            let created = node.create_subscription(&topic, spec);
            step("make a probe subscription", &topic, created).await;
        }
        let live = record.id == node.node_id()
            || liveness.since(record.id).is_some_and(|s| s < LIVE_WITHIN);
        let led_elsewhere = node
            .broker_leader(&topic, 0)
            .is_some_and(|leader| leader != record.id);
        let holds = node
            .state()
            .topic(&topic)
            .is_some_and(|t| t.placement.iter().any(|p| p.replicas.contains(&record.id)));
        // Active as the metadata says now, not when this look began: the steps above may
        // have taken seconds, and a node drained meanwhile must not get its leadership back
        // (a drain's replica move then met the wrong leader, seen in cluster/five.rs).
        let active_now = node.state().node(record.id).is_some_and(|n| n.is_active());
        if live && led_elsewhere && holds && active_now {
            let moved = node.move_leader(&topic, 0, record.id);
            step("move a probe partition's leader to its node", &topic, moved).await;
        }
    }
    let orphans: Vec<String> = state
        .topics()
        .keys()
        .filter(|name| probe_topic_owner(name).is_some_and(|owner| state.node(owner).is_none()))
        .cloned()
        .collect();
    for topic in orphans {
        step(
            "delete a removed node's probe topic",
            &topic,
            node.delete_topic(&topic),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_probe_topic_names_its_node_and_nothing_else_does() {
        assert_eq!(node_probe_topic(3), "__wharf.probe.3");
        assert_eq!(probe_topic_owner("__wharf.probe.3"), Some(3));
        assert_eq!(probe_topic_owner("__wharf.probe.1234"), Some(1234));
        for other in [
            PROBE_TOPIC,
            PROBE_DEAD_LETTERS,
            "__wharf.probe.",
            "__wharf.probe.3x",
            "__wharf.probe.+3",
            "__wharf.probe3",
            "orders",
        ] {
            assert_eq!(probe_topic_owner(other), None, "{other}");
        }
    }
}
