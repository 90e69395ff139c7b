//! Automatic preferred-leader election on this node ([`broker_core::cluster::lead_back`]):
//! every [`LOOK_EVERY_MS`] it looks at the partitions it leads and hands each back to its
//! preferred leader once that node has been Active, live (heard from within
//! [`LIVE_WITHIN`]) and caught up for the whole configured wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::cluster::lead_back::LeadBack;
use broker_core::cluster_node::ClusterNode;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{LIVE_WITHIN, Liveness};

/// How often this node looks at the partitions it leads. A preferred leader's health is
/// sampled this often, so it must hold at every look of the wait.
pub const LOOK_EVERY_MS: u64 = 2_000;
/// Longest one hand-back may take: the transfer's own bounds (its 5 s wait for the target to
/// lead and 2 s calls) with room; past it the look goes on, and the partition is due again
/// only after another whole wait.
pub const HAND_BACK_TIMEOUT_MS: u64 = 10_000;

/// The task handing this node's partitions back to their preferred leaders.
#[derive(Debug)]
pub struct LeadBackTask {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl LeadBackTask {
    /// Starts looking, handing a partition back once its preferred leader was fit for
    /// `after`.
    pub fn start(node: Arc<ClusterNode>, liveness: Liveness, after: Duration) -> LeadBackTask {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut policy = LeadBack::new(after);
            let mut interval = tokio::time::interval(Duration::from_millis(LOOK_EVERY_MS));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = interval.tick() => {}
                }
                look_once(&node, &liveness, &mut policy).await;
            }
        });
        LeadBackTask { stop, task }
    }

    /// Stops after the look under way (each hand-back is bounded by
    /// [`HAND_BACK_TIMEOUT_MS`]) and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// One look: the partitions due go back one after another.
async fn look_once(node: &ClusterNode, liveness: &Liveness, policy: &mut LeadBack) {
    let me = node.node_id();
    let led = node.led_partitions();
    if led.is_empty() {
        return;
    }
    let live = |n: u64| liveness.since(n).is_some_and(|s| s < LIVE_WITHIN);
    let due = policy.due(&node.state(), me, &led, live, Instant::now());
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
