//! One probe round: produce a message holding a nonce on [`PROBE_TOPIC`], receive on
//! [`PROBE_SUBSCRIPTION`] until that message comes (acking whatever else comes: messages of
//! earlier rounds that failed), ack it, and return the produce → received time. Each step
//! runs under [`STEP_TIMEOUT_MS`]. [`ensure_topic`] makes the topic and subscription once.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use broker_core::broker::{AckMode, NewMessage, ReceiveRequest};
use broker_core::limits::MAX_MAX_DELIVERIES;
use broker_core::subscription::{StartPosition, SubscriptionSpec};
use broker_core::topic::{MIN_RETENTION_MS, TopicSpec};
use broker_core::{Broker, BrokerError};
use bytes::Bytes;
use serde::Serialize;
use utoipa::ToSchema;

/// The internal probe topic: `__` names are refused to users, hidden from listings, stats
/// and history, and every request path naming one is answered 404 (see
/// [`crate::http::internal_topics`]).
pub const PROBE_TOPIC: &str = "__wharf.probe";
/// The probe's subscription on [`PROBE_TOPIC`].
pub const PROBE_SUBSCRIPTION: &str = "probe";
/// Longest time of each step of a round (set-up, produce, receive of the probe's message,
/// ack), in ms: a produce or ack waits for one group commit and a delivery for one commit
/// notification, milliseconds on a healthy node; 5 s is past any fsync of a busy disk, so a
/// step that takes longer is a node in trouble.
pub(crate) const STEP_TIMEOUT_MS: u64 = 5_000;
/// Retention by age of the probe topic: the shortest a topic takes. Every probe message is
/// acked within a round, so none is wanted after it.
pub(crate) const PROBE_RETENTION_MS: u64 = MIN_RETENTION_MS;
/// Retention by size of the probe topic, 1 MiB: sealed segments beyond it go at the next
/// retention check. With the active segment (at most `segment_bytes`) this bounds the
/// topic's disk; at one ~100-byte message per round, a 64 MiB segment fills in weeks.
pub(crate) const PROBE_RETENTION_BYTES: u64 = 1024 * 1024;
/// Messages taken per receive of a round: the probe's own and those of earlier rounds that
/// failed before they were received, acked in batches of this many.
pub(crate) const RECEIVE_BATCH: usize = 100;

/// A step of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStep {
    /// Making the probe topic and subscription.
    Setup,
    /// Producing the probe message.
    Produce,
    /// Receiving it.
    Receive,
    /// Acking it.
    Ack,
}

impl ProbeStep {
    /// The name of the step (the `step` label of `wharf_probe_failures_total`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeStep::Setup => "setup",
            ProbeStep::Produce => "produce",
            ProbeStep::Receive => "receive",
            ProbeStep::Ack => "ack",
        }
    }

    /// Every step, for the failure counter's series.
    pub const ALL: [ProbeStep; 4] = [
        ProbeStep::Setup,
        ProbeStep::Produce,
        ProbeStep::Receive,
        ProbeStep::Ack,
    ];
}

/// Why a round failed: the step and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeFailure {
    /// The step that failed.
    pub step: ProbeStep,
    /// What went wrong.
    pub reason: String,
    /// The step was refused because this node no longer leads the probe's partition (in a
    /// cluster): the round says nothing about the node's health.
    pub leader_moved: bool,
}

impl ProbeFailure {
    /// A failure of `step`.
    pub fn new(step: ProbeStep, reason: impl Into<String>) -> ProbeFailure {
        ProbeFailure {
            step,
            reason: reason.into(),
            leader_moved: false,
        }
    }

    /// A failure of `step` with the broker's `error`.
    fn of(step: ProbeStep, error: &BrokerError) -> ProbeFailure {
        ProbeFailure {
            leader_moved: matches!(error, BrokerError::NotLeader { .. }),
            ..ProbeFailure::new(step, error.to_string())
        }
    }
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step.as_str(), self.reason)
    }
}

/// Runs `future` as `step` under [`STEP_TIMEOUT_MS`]; the broker's error is kept for the
/// caller to judge.
async fn timed<T>(
    step: ProbeStep,
    future: impl Future<Output = Result<T, BrokerError>>,
) -> Result<Result<T, BrokerError>, ProbeFailure> {
    tokio::time::timeout(Duration::from_millis(STEP_TIMEOUT_MS), future)
        .await
        .map_err(|_| ProbeFailure::new(step, format!("no answer within {STEP_TIMEOUT_MS} ms")))
}

/// Runs `future` as `step` under [`STEP_TIMEOUT_MS`]; an error fails the step.
async fn step<T>(
    step: ProbeStep,
    future: impl Future<Output = Result<T, BrokerError>>,
) -> Result<T, ProbeFailure> {
    timed(step, future)
        .await?
        .map_err(|error| ProbeFailure::of(step, &error))
}

/// The settings of a probe topic named `name`.
pub(crate) fn probe_topic_spec(name: &str) -> TopicSpec {
    TopicSpec {
        name: name.to_owned(),
        retention_ms: Some(PROBE_RETENTION_MS),
        retention_bytes: Some(PROBE_RETENTION_BYTES),
        internal: true,
        ..TopicSpec::default()
    }
}

/// The settings of [`PROBE_SUBSCRIPTION`], its dead letters going to `dead_letter_topic`
/// (the default name when `None`).
pub(crate) fn probe_subscription_spec(dead_letter_topic: Option<String>) -> SubscriptionSpec {
    SubscriptionSpec {
        name: PROBE_SUBSCRIPTION.to_owned(),
        start: Some(StartPosition::Latest),
        ack_timeout_ms: None,
        retry: None,
        // A probe message left unacked is acked by the next round that receives it: no
        // reason to move it to a dead-letter topic early.
        max_deliveries: Some(MAX_MAX_DELIVERIES),
        dead_letter_topic,
        filter: None,
        ordering: None,
    }
}

/// Makes [`PROBE_TOPIC`] and [`PROBE_SUBSCRIPTION`] unless they exist (they survive a
/// restart, with the other topics), on a single node. Cheap when they do: the task calls it
/// every round, so a probe topic lost some other way is made again.
pub(crate) async fn ensure_topic(broker: &Broker) -> Result<(), ProbeFailure> {
    if broker.describe_topic(PROBE_TOPIC).is_err() {
        let created = broker.create_topic(probe_topic_spec(PROBE_TOPIC));
        match timed(ProbeStep::Setup, created).await? {
            Ok(_) | Err(BrokerError::TopicExists { .. }) => {}
            Err(error) => return Err(ProbeFailure::new(ProbeStep::Setup, error.to_string())),
        }
    }
    let exists = broker
        .describe_subscription(PROBE_TOPIC, PROBE_SUBSCRIPTION)
        .await
        .is_ok();
    if !exists {
        let created = broker.create_subscription(PROBE_TOPIC, probe_subscription_spec(None));
        match timed(ProbeStep::Setup, created).await? {
            Ok(_) | Err(BrokerError::SubscriptionExists { .. }) => {}
            Err(error) => return Err(ProbeFailure::new(ProbeStep::Setup, error.to_string())),
        }
    }
    Ok(())
}

/// One round on `topic` with `nonce` as the message's value, its produce answered per
/// `ack`. With `consumer_paused` (a test's fault, see [`super::ProbeHooks`]) the receive
/// step waits out its timeout without receiving, as a stuck delivery path would. Returns
/// the produce → received time.
pub(crate) async fn run_round(
    broker: &Broker,
    topic: &str,
    ack: AckMode,
    nonce: &str,
    consumer_paused: bool,
) -> Result<Duration, ProbeFailure> {
    let started = Instant::now();
    let message = NewMessage {
        key: None,
        value: Bytes::copy_from_slice(nonce.as_bytes()),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    };
    step(
        ProbeStep::Produce,
        broker.produce(topic, vec![message], ack),
    )
    .await?;
    let deadline = Instant::now() + Duration::from_millis(STEP_TIMEOUT_MS);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(ProbeFailure::new(
                ProbeStep::Receive,
                format!("the probe message was not received within {STEP_TIMEOUT_MS} ms"),
            ));
        }
        let request = ReceiveRequest {
            max_messages: RECEIVE_BATCH,
            wait_ms: u64::try_from(remaining.as_millis()).unwrap_or(STEP_TIMEOUT_MS),
            ack_timeout_ms: None,
            attempt_id: None,
            memory: None,
        };
        let received = async {
            if consumer_paused {
                std::future::pending::<()>().await;
            }
            broker.receive(topic, PROBE_SUBSCRIPTION, request).await
        };
        let deliveries = match tokio::time::timeout(remaining, received).await {
            Ok(Ok(deliveries)) => deliveries,
            Ok(Err(error)) => return Err(ProbeFailure::of(ProbeStep::Receive, &error)),
            Err(_) => continue,
        };
        if deliveries.is_empty() {
            continue;
        }
        let ours = deliveries
            .iter()
            .position(|d| d.message.record.value.as_ref() == nonce.as_bytes());
        let latency = started.elapsed();
        let receipts: Vec<String> = deliveries.into_iter().map(|d| d.receipt).collect();
        let settled = step(
            ProbeStep::Ack,
            broker.ack(topic, PROBE_SUBSCRIPTION, &receipts),
        )
        .await?;
        if let Some(index) = ours {
            let refused = settled
                .failed
                .iter()
                .any(|(receipt, _)| *receipt == receipts[index]);
            if refused {
                return Err(ProbeFailure::new(
                    ProbeStep::Ack,
                    "the probe message's receipt was refused",
                ));
            }
            return Ok(latency);
        }
    }
}
