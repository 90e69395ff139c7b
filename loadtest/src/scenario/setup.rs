//! Setup calls: topics, subscriptions, and filling a topic with `produce-batch` requests.
//! Setup is not measured; a setup request that fails stops the scenario.

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use tokio::time::Instant;

use super::{Budget, Load, ScenarioError};
use crate::client::{Connection, RequestError};
use crate::wire;

/// Messages per fill request: `produce-batch`'s batch.
pub const FILL_BATCH: usize = 100;
/// Connections a fill uses: enough to keep the writer's group commit busy.
pub const FILL_CONNECTIONS: usize = 16;

/// `prefix-<random hex>`: a name no earlier run used.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}-{:08x}", rand::random::<u32>())
}

/// Creates a topic; one that already exists is fine.
pub async fn create_topic(load: &Load, name: &str, partitions: u32) -> Result<(), ScenarioError> {
    let body = wire::create_topic_body(name, partitions);
    let result = load.connect().post(wire::TOPICS_PATH, body).await;
    expect_created(&format!("create topic {name}"), result)
}

/// Creates a subscription; one that already exists is fine.
pub async fn create_subscription(
    load: &Load,
    topic: &str,
    name: &str,
    start: &str,
) -> Result<(), ScenarioError> {
    let body = wire::create_subscription_body(name, start, 60_000);
    let result = load
        .connect()
        .post(&wire::subscriptions_path(topic), body)
        .await;
    expect_created(&format!("create subscription {topic}/{name}"), result)
}

fn expect_created(
    step: &str,
    result: Result<crate::client::Reply, RequestError>,
) -> Result<(), ScenarioError> {
    match result {
        Ok(reply) if reply.is_success() || reply.status == StatusCode::CONFLICT => Ok(()),
        Ok(reply) => Err(ScenarioError::Setup {
            step: step.to_owned(),
            detail: format!("{} {}", reply.status, String::from_utf8_lossy(&reply.body)),
        }),
        Err(error) => Err(ScenarioError::Setup {
            step: step.to_owned(),
            detail: error.to_string(),
        }),
    }
}

/// Messages stored in a topic: the sum of its partitions' end offsets (0 if unknown).
pub async fn stored_messages(load: &Load, topic: &str) -> u64 {
    let Ok(reply) = load.connect().get(&wire::topic_path(topic)).await else {
        return 0;
    };
    serde_json::from_slice::<wire::TopicReply>(&reply.body)
        .map(|t| t.partition_stats.iter().map(|p| p.end_offset).sum())
        .unwrap_or(0)
}

/// Produces at least `messages` 1 KiB messages into `topic` in batches of [`FILL_BATCH`], on
/// [`FILL_CONNECTIONS`] connections, giving up after `limit`. Returns how many were stored.
pub async fn fill(
    load: &Load,
    topic: &str,
    messages: u64,
    limit: Duration,
) -> Result<u64, ScenarioError> {
    let requests = messages.div_ceil(FILL_BATCH as u64);
    let budget = Budget::new(requests);
    let deadline = Instant::now() + limit;
    let body = wire::produce_body(FILL_BATCH, wire::MESSAGE_BYTES);
    let path = wire::messages_path(topic);
    let workers: Vec<_> = (0..FILL_CONNECTIONS)
        .map(|_| {
            let connection = load.connect();
            let (budget, body, path) = (budget.clone(), body.clone(), path.clone());
            tokio::spawn(fill_worker(connection, budget, body, path, deadline))
        })
        .collect();
    let mut stored = 0;
    for worker in workers {
        stored += worker.await.unwrap_or(0);
    }
    if stored == 0 && messages > 0 {
        return Err(ScenarioError::Setup {
            step: format!("fill {topic}"),
            detail: "no produce request succeeded".to_owned(),
        });
    }
    Ok(stored)
}

async fn fill_worker(
    mut connection: Connection,
    budget: Budget,
    body: Bytes,
    path: String,
    deadline: Instant,
) -> u64 {
    let mut stored = 0;
    while Instant::now() < deadline && budget.take() {
        match connection.post(&path, body.clone()).await {
            Ok(reply) if reply.is_success() => stored += FILL_BATCH as u64,
            Ok(reply) if reply.status == StatusCode::SERVICE_UNAVAILABLE => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => {}
        }
    }
    stored
}

/// Keys tried by [`key_for_partition`] before giving up: with `n` partitions a key lands on a
/// given one with chance 1/n, so 64 tries miss with 16 partitions about 1.6% of the time.
pub const KEY_PROBES: u32 = 64;

/// Pause after a probe that failed (a fresh topic's partitions may still be electing leaders).
const PROBE_RETRY: Duration = Duration::from_millis(100);

/// A key that Wharf maps to `partition` of `topic`, found by producing one small probe
/// message per candidate key and reading the partition its reply names (so the probes are
/// stored in the topic: one to a few messages).
pub async fn key_for_partition(
    load: &Load,
    topic: &str,
    partition: u32,
) -> Result<String, ScenarioError> {
    let mut connection = load.connect();
    let path = wire::messages_path(topic);
    for probe in 0..KEY_PROBES {
        let key = format!("p{partition}-{probe}");
        let body = wire::keyed_produce_body(1, 8, Some(&key));
        let landed = match connection.post(&path, body).await {
            Ok(reply) if reply.is_success() => {
                serde_json::from_slice::<wire::ProduceReply>(&reply.body)
                    .ok()
                    .and_then(|r| r.messages.first().and_then(|m| m.partition))
            }
            _ => {
                tokio::time::sleep(PROBE_RETRY).await;
                None
            }
        };
        if landed == Some(partition) {
            return Ok(key);
        }
    }
    Err(ScenarioError::Setup {
        step: format!("find a key for partition {partition} of {topic}"),
        detail: format!("none of {KEY_PROBES} probe keys landed there"),
    })
}
