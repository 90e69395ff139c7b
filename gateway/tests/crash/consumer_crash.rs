//! Consumers that crash mid-batch (RELIABILITY.md S6): four consumers receive batches; now and
//! then one dies holding its leases (its task is aborted: some of its messages acked, the rest
//! never, sometimes with a receive still waiting) and a new one takes its place. Every message
//! is acknowledged at least once; the duplicate deliveries this costs are counted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::XorShift;
use crate::support::common::Harness;

const TOPIC: &str = "jobs";
const SUB: &str = "workers";
const MESSAGES: usize = 400;
/// Lease of a delivery: short, so that a dead consumer's messages come back within the test.
const ACK_TIMEOUT_MS: u64 = 1_000;
const CONSUMERS: usize = 4;
/// Bound on the whole consumption, crashes and redeliveries included.
const DEADLINE: Duration = Duration::from_secs(60);

/// Deliveries per message id, and ids acked.
#[derive(Default)]
struct Seen {
    deliveries: HashMap<String, u64>,
    acked: HashMap<String, u64>,
}

/// Receives batches and acks them until it "crashes": after a few batches it acks only part of
/// one and returns (leaving the rest leased), or returns with nothing acked.
async fn consumer(harness: Arc<Harness>, seen: Arc<Mutex<Seen>>, seed: u64) {
    let mut rng = XorShift(seed | 1);
    let batches_before_crash = 1 + rng.below(4);
    for batch in 0..=batches_before_crash {
        let messages = harness
            .receive(TOPIC, SUB, json!({ "max_messages": 10, "wait_ms": 500 }))
            .await;
        let mut to_ack = Vec::new();
        {
            let mut seen = seen.lock().expect("lock");
            for message in &messages {
                let id = message["id"].as_str().expect("id").to_owned();
                *seen.deliveries.entry(id).or_default() += 1;
            }
        }
        let keep = if batch == batches_before_crash {
            rng.below(messages.len() as u64 + 1) as usize
        } else {
            messages.len()
        };
        for message in messages.iter().take(keep) {
            to_ack.push(message["receipt"].as_str().expect("receipt").to_owned());
        }
        if !to_ack.is_empty() {
            let reply = harness.ack(TOPIC, SUB, &to_ack).await;
            let mut seen = seen.lock().expect("lock");
            for message in messages.iter().take(keep) {
                let id = message["id"].as_str().expect("id").to_owned();
                let failed = reply["failed"].as_array().is_some_and(|failed| {
                    failed.iter().any(|f| f["receipt"] == message["receipt"])
                });
                if !failed {
                    *seen.acked.entry(id).or_default() += 1;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_is_acknowledged_though_consumers_die_holding_leases() {
    let harness = Arc::new(Harness::start().await);
    harness
        .create_topic(json!({ "name": TOPIC, "partitions": 2 }))
        .await;
    harness
        .create_subscription(
            TOPIC,
            json!({ "name": SUB, "ack_timeout_ms": ACK_TIMEOUT_MS, "max_deliveries": 1000,
                    "retry": { "initial_backoff_ms": 0, "max_backoff_ms": 0 } }),
        )
        .await;
    let mut produced = Vec::new();
    for chunk in 0..MESSAGES / 100 {
        let batch: Vec<Value> = (0..100)
            .map(|i| json!({ "value": format!("job-{chunk}-{i}") }))
            .collect();
        for reply in harness.produce(TOPIC, batch).await {
            produced.push(reply["id"].as_str().expect("id").to_owned());
        }
    }

    let seen = Arc::new(Mutex::new(Seen::default()));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    let started = Instant::now();
    let mut started_consumers = 0u64;
    let mut next_seed = seed;
    let mut consumers: Vec<_> = Vec::new();
    while seen.lock().expect("lock").acked.len() < MESSAGES && started.elapsed() < DEADLINE {
        consumers.retain(|task: &tokio::task::JoinHandle<()>| !task.is_finished());
        while consumers.len() < CONSUMERS {
            next_seed = next_seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(1);
            consumers.push(tokio::spawn(consumer(
                harness.clone(),
                seen.clone(),
                next_seed,
            )));
            started_consumers += 1;
        }
        // Now and then kill one mid-request: its receive or ack is cut off.
        if XorShift(next_seed).below(4) == 0
            && let Some(task) = consumers.pop()
        {
            task.abort();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for task in consumers {
        task.abort();
        let _ = task.await;
    }
    let seen = std::mem::take(&mut *seen.lock().expect("lock"));
    let never_acked = produced
        .iter()
        .filter(|id| !seen.acked.contains_key(*id))
        .count();
    let deliveries: u64 = seen.deliveries.values().sum();
    let duplicates = deliveries.saturating_sub(seen.deliveries.len() as u64);
    CaseLine::new("S6", "consumer-crash-mid-batch")
        .seed(seed)
        .figure("consumers started", started_consumers)
        .must_be_zero("never acknowledged", never_acked as u64, MESSAGES as u64)
        .figure("deliveries", deliveries)
        .figure(
            "duplicate delivery rate %",
            format!(
                "{:.1}",
                100.0 * duplicates as f64 / deliveries.max(1) as f64
            ),
        )
        .record();
    assert_eq!(never_acked, 0, "seed {seed}: messages never acknowledged");
    assert!(
        duplicates > 0,
        "seed {seed}: no consumer died holding a lease"
    );
    Arc::into_inner(harness).expect("sole owner").stop().await;
}
