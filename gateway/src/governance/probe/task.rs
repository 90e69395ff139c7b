//! [`ProbeTask`]: the loop that runs a probe round every `probe_interval_ms`, records each
//! outcome in [`ProbeHealth`] and the metrics, until stopped; [`ProbeHooks`]: the fault a
//! test sets.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use broker_core::Broker;
use broker_core::broker::AckMode;
use broker_core::clock::{now_ms, steady_ms};
use metrics::{counter, histogram};
use rand::RngCore;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::health::ProbeHealth;
use super::keeper::node_probe_topic;
use super::round::{PROBE_SUBSCRIPTION, PROBE_TOPIC, ProbeStep, ensure_topic, run_round};
use crate::governance::metrics::{PROBE_FAILURES, PROBE_ROUND_TRIP_SECONDS};

/// A fault tests set on the probe (no flag or key sets it).
#[derive(Debug, Clone, Default)]
pub struct ProbeHooks {
    consumer_paused: Arc<AtomicBool>,
}

impl ProbeHooks {
    /// While `paused`, rounds still produce their message but do not receive: the receive
    /// step waits out its timeout and the round fails, as on a node whose deliveries are
    /// stuck. Messages produced meanwhile are received and acked once it resumes.
    pub fn pause_consumer(&self, paused: bool) {
        self.consumer_paused.store(paused, Ordering::SeqCst);
    }

    fn consumer_paused(&self) -> bool {
        self.consumer_paused.load(Ordering::SeqCst)
    }
}

/// Where a node probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeScope {
    /// A single node: [`super::PROBE_TOPIC`], made by the probe itself, produced with
    /// `ack=leader` (the node's own fsync).
    Single,
    /// Cluster node `node`: its own topic ([`super::keeper::node_probe_topic`], made by the
    /// controller leader's keeper), produced with `ack=all`, probed while the node leads it.
    Cluster {
        /// This node's id.
        node: u64,
    },
}

/// The running probe of one node.
#[derive(Debug)]
pub struct ProbeTask {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl ProbeTask {
    /// Starts probing `broker` every `interval_ms` (the first round at once), recording in
    /// `health`; `None` when `interval_ms` is 0 (probes off).
    pub fn start(
        broker: Arc<Broker>,
        scope: ProbeScope,
        health: Arc<ProbeHealth>,
        interval_ms: u64,
        hooks: Option<ProbeHooks>,
    ) -> Option<ProbeTask> {
        if interval_ms == 0 {
            return None;
        }
        // Every step's series exists from the start, at 0, so a rate over it is defined.
        for step in ProbeStep::ALL {
            counter!(PROBE_FAILURES, "step" => step.as_str()).increment(0);
        }
        let (stop, stopped) = watch::channel(false);
        let hooks = hooks.unwrap_or_default();
        let task = tokio::spawn(probe_loop(
            broker,
            scope,
            health,
            interval_ms,
            hooks,
            stopped,
        ));
        Some(ProbeTask { stop, task })
    }

    /// Stops the loop after the round under way (each of its steps is bounded by
    /// [`super::round::STEP_TIMEOUT_MS`]) and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn probe_loop(
    broker: Arc<Broker>,
    scope: ProbeScope,
    health: Arc<ProbeHealth>,
    interval_ms: u64,
    hooks: ProbeHooks,
    mut stop: watch::Receiver<bool>,
) {
    let mut interval = tokio::time::interval(Duration::from_millis(interval_ms));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut round = 0u64;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = interval.tick() => {}
        }
        round += 1;
        let nonce = format!("{:016x}-{round}", rand::rngs::OsRng.next_u64());
        let paused = hooks.consumer_paused();
        let outcome = match scope {
            ProbeScope::Single => match ensure_topic(&broker).await {
                Ok(()) => run_round(&broker, PROBE_TOPIC, AckMode::Leader, &nonce, paused).await,
                Err(failure) => Err(failure),
            },
            ProbeScope::Cluster { node } => {
                let topic = node_probe_topic(node);
                if !leads_probe(&broker, &topic, node).await {
                    continue;
                }
                run_round(&broker, &topic, AckMode::All, &nonce, paused).await
            }
        };
        match outcome {
            Ok(latency) => {
                histogram!(PROBE_ROUND_TRIP_SECONDS).record(latency.as_secs_f64());
                health.succeeded(now_ms(), latency.as_secs_f64() * 1000.0);
            }
            Err(failure) if failure.leader_moved => {
                tracing::debug!(%failure, "a probe round ended early: the probe's partition moved");
            }
            Err(failure) => {
                counter!(PROBE_FAILURES, "step" => failure.step.as_str()).increment(1);
                tracing::warn!(%failure, "the synthetic probe failed");
                health.failed(now_ms(), steady_ms(), &failure);
            }
        }
    }
}

/// Whether cluster node `node` leads its probe topic `topic`, whose subscription it has: a
/// node that does not (its topic not made yet, or led by another while the node was away)
/// skips the round, which would say nothing of its own health.
async fn leads_probe(broker: &Broker, topic: &str, node: u64) -> bool {
    broker.partition_leader(topic, 0) == Some(node)
        && broker
            .describe_subscription(topic, PROBE_SUBSCRIPTION)
            .await
            .is_ok()
}
