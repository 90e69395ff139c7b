//! Automatic preferred-leader election on this node ([`broker_core::cluster::lead_back`]):
//! every [`LOOK_EVERY_MS`] it looks at the partitions it leads and hands each back to its
//! preferred leader once that node has been Active, live (heard from within
//! [`LIVE_WITHIN`]) and caught up for the whole configured wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::cluster::lead_back::LeadBack;
use broker_core::cluster_node::ClusterNode;

use super::{LIVE_WITHIN, Liveness};
use crate::cluster::periodic::{Look, Periodic};

/// How often this node looks at the partitions it leads. A preferred leader's health is
/// sampled this often, so it must hold at every look of the wait.
pub const LOOK_EVERY_MS: u64 = 2_000;
/// Longest one hand-back may take: the transfer's own bounds (its 5 s wait for the target to
/// lead and 2 s calls) with room; past it the look goes on, and the partition is due again
/// only after another whole wait.
pub const HAND_BACK_TIMEOUT_MS: u64 = 10_000;

/// The task handing this node's partitions back to their preferred leaders.
#[derive(Debug)]
pub struct LeadBackTask(Periodic);

impl LeadBackTask {
    /// Starts looking, handing a partition back once its preferred leader was fit for
    /// `after`.
    pub fn start(node: Arc<ClusterNode>, liveness: Liveness, after: Duration) -> LeadBackTask {
        let looker = LeadBackLook {
            node,
            liveness,
            policy: LeadBack::new(after),
        };
        LeadBackTask(Periodic::start(
            Duration::from_millis(LOOK_EVERY_MS),
            looker,
        ))
    }

    /// Stops after the look under way (each hand-back is bounded by
    /// [`HAND_BACK_TIMEOUT_MS`]) and waits for it.
    pub async fn stop(self) {
        self.0.stop().await;
    }
}

struct LeadBackLook {
    node: Arc<ClusterNode>,
    liveness: Liveness,
    policy: LeadBack,
}

impl Look for LeadBackLook {
    async fn look(&mut self) {
        look_once(&self.node, &self.liveness, &mut self.policy).await;
    }
}

/// One look: the partitions due go back one after another.
async fn look_once(node: &ClusterNode, liveness: &Liveness, policy: &mut LeadBack) {
    let state = node.state();
    let led = node.led_partitions(&state);
    if led.is_empty() {
        return;
    }
    let live = |n: u64| liveness.since(n).is_some_and(|s| s < LIVE_WITHIN);
    let due = policy.due(&state, node.node_id(), &led, live, Instant::now());
    for hand in due {
        let moving = node.hand_leadership(&hand.topic, hand.partition, hand.to);
        let timeout = Duration::from_millis(HAND_BACK_TIMEOUT_MS);
        match tokio::time::timeout(timeout, moving).await {
            Ok(Ok(moved)) => tracing::info!(
                topic = %hand.topic, partition = hand.partition, to = hand.to,
                ms = moved.took_ms, "handed a partition back to its preferred leader"
            ),
            Ok(Err(error)) => tracing::warn!(
                %error, topic = %hand.topic, partition = hand.partition, to = hand.to,
                "could not hand a partition back to its preferred leader"
            ),
            Err(_) => tracing::warn!(
                topic = %hand.topic, partition = hand.partition, to = hand.to,
                "handing a partition back to its preferred leader did not end in time"
            ),
        }
    }
}
