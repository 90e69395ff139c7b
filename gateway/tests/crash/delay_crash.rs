//! Delayed messages across a `kill -9`: 10,000 messages due over 0–5 s, some cancelled, the
//! server killed in the middle and restarted. None is received before it is due, none is lost,
//! none is appended twice, cancelled ones never arrive. Client ids produced just before the
//! kill (stored and delayed) are still known after it: a repeat answers with the first result. The lateness after due is printed (the
//! precision target is measured here, not asserted: these machines are shared and noisy).

#![allow(
    clippy::print_stdout,
    reason = "the test reports the lateness it measured"
)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::child::{Server, post_ok};
use crate::support::now_ms;

const MESSAGES: usize = 10_000;
const SPREAD_MS: u64 = 5_000;
/// How close to its due time a cancel may be sent and still find the message gone (404): the
/// server decides when the request reaches it, which on a loaded machine can be this much
/// later than the client sent it (a CI run on a loaded machine saw a 404 for a cancel sent
/// 3 ms before the message was due).
const CANCEL_MARGIN_MS: u64 = 1_000;

/// Receives and acks until `until` or until `expected` ids were seen; records when each id was
/// first received. Stops quietly when the server goes away.
async fn consume(base: &str, seen: &mut HashMap<String, u64>, expected: usize, until: Instant) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    while seen.len() < expected && Instant::now() < until {
        let Ok(response) = client
            .post(format!("{base}/v1/topics/d/subscriptions/s/receive"))
            .json(&json!({"max_messages": 1000, "wait_ms": 500}))
            .send()
            .await
        else {
            return;
        };
        let Ok(reply) = response.json::<Value>().await else {
            return;
        };
        let received_ms = now_ms();
        let messages = reply["messages"].as_array().cloned().unwrap_or_default();
        let receipts: Vec<Value> = messages.iter().map(|m| m["receipt"].clone()).collect();
        for message in &messages {
            let id = message["id"].as_str().expect("id").to_owned();
            seen.entry(id).or_insert(received_ms);
        }
        if !receipts.is_empty() {
            let acked = client
                .post(format!("{base}/v1/topics/d/subscriptions/s/ack"))
                .json(&json!({ "receipts": receipts }))
                .send()
                .await;
            if acked.is_err() {
                return;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_survive_kill_9_never_early_never_twice() {
    let data = tempfile::tempdir().expect("temp dir");
    let client = reqwest::Client::new();
    let server = Server::start(data.path()).await;
    let base = server.base.clone();
    post_ok(
        &client,
        &format!("{base}/v1/topics"),
        json!({"name": "d", "partitions": 2}),
    )
    .await;
    post_ok(
        &client,
        &format!("{base}/v1/topics/d/subscriptions"),
        json!({"name": "s", "start": "earliest", "ack_timeout_ms": 60000}),
    )
    .await;

    // 10,000 messages due spread over 0–5 s, in batches of 500.
    let mut due: HashMap<String, u64> = HashMap::new();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for batch in 0..MESSAGES / 500 {
        let messages: Vec<Value> = (0..500)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                json!({"value": format!("m{batch}-{i}"), "key": format!("k{}", i % 17), "delay_ms": state % SPREAD_MS})
            })
            .collect();
        let sent_ms = now_ms();
        let reply = post_ok(
            &client,
            &format!("{base}/v1/topics/d/messages"),
            json!({ "messages": messages }),
        )
        .await;
        for entry in reply["messages"].as_array().expect("messages") {
            let id = entry["id"].as_str().expect("id").to_owned();
            // A delay of 0 is stored at once: it is due when it was sent.
            let at = match entry["deliver_at_ms"].as_u64() {
                Some(at) => at,
                None => {
                    assert!(
                        entry["offset"].is_u64(),
                        "neither deliver_at_ms nor offset: {entry}"
                    );
                    sent_ms
                }
            };
            due.insert(id, at);
        }
    }
    assert_eq!(due.len(), MESSAGES);

    // Cancel 100 that are still well ahead. On a loaded machine the cancels themselves can
    // take until some of them are due: a message already due is no longer cancellable (404),
    // which is right, and it then must arrive like any other. A cancel sent more than
    // CANCEL_MARGIN_MS before its message was due must succeed.
    let horizon = now_ms() + 2_500;
    let candidates: Vec<String> = due
        .iter()
        .filter(|(_, at)| **at > horizon)
        .map(|(id, _)| id.clone())
        .take(100)
        .collect();
    let mut cancelled = BTreeSet::new();
    for id in candidates {
        let asked_ms = now_ms();
        let response = client
            .delete(format!("{base}/v1/topics/d/messages/{id}"))
            .send()
            .await
            .expect("cancel");
        match response.status().as_u16() {
            204 => {
                cancelled.insert(id);
            }
            404 if asked_ms + CANCEL_MARGIN_MS >= due[&id] => {}
            status => panic!(
                "cancelling {id} {} ms before it was due: {status}",
                due[&id].saturating_sub(asked_ms)
            ),
        }
    }
    assert!(!cancelled.is_empty(), "no cancel succeeded");

    // Ids produced shortly before the kill: whether sled's dedup tree has them depends on when
    // sled last wrote its buffers out; the log has them.
    post_ok(&client, &format!("{base}/v1/topics"), json!({"name": "i"})).await;
    let with_ids = json!({"messages": [
        {"id": "stored-before-kill", "value": "a"},
        {"id": "delayed-before-kill", "value": "b", "delay_ms": 600_000},
    ]});
    let first = post_ok(
        &client,
        &format!("{base}/v1/topics/i/messages"),
        with_ids.clone(),
    )
    .await;

    // Consume for about a second and a half, then kill -9 in the middle of the deliveries.
    let mut seen: HashMap<String, u64> = HashMap::new();
    consume(
        &base,
        &mut seen,
        MESSAGES,
        Instant::now() + Duration::from_millis(1_500),
    )
    .await;
    server.kill_9();
    let before_crash = seen.len();

    let server = Server::start(data.path()).await;
    let repeat = post_ok(
        &client,
        &format!("{}/v1/topics/i/messages", server.base),
        with_ids,
    )
    .await;
    for (first, again) in first["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .zip(repeat["messages"].as_array().expect("messages"))
    {
        assert_eq!(again["duplicate"], json!(true), "{again} repeats {first}");
        for field in ["partition", "offset", "deliver_at_ms"] {
            assert_eq!(again[field], first[field], "{field} of {again} vs {first}");
        }
    }
    let expected = MESSAGES - cancelled.len();
    consume(
        &server.base,
        &mut seen,
        expected,
        Instant::now() + Duration::from_secs(30),
    )
    .await;

    // Every message not cancelled arrived, none early, no cancelled one at all.
    let early: Vec<(&String, u64, u64)> = seen
        .iter()
        .filter_map(|(id, at)| due.get(id).filter(|d| at < *d).map(|d| (id, *at, *d)))
        .take(5)
        .collect();
    assert!(
        early.is_empty(),
        "received before due (id, received, due): {early:?}"
    );
    for id in &cancelled {
        assert!(!seen.contains_key(id), "cancelled message {id} arrived");
    }
    assert_eq!(
        seen.len(),
        expected,
        "{} of {expected} arrived ({before_crash} before the crash)",
        seen.len()
    );

    // The log holds every delivered message exactly once.
    let mut in_log: BTreeMap<String, usize> = BTreeMap::new();
    for partition in 0..2 {
        for message in server.read_partition("d", partition).await {
            *in_log
                .entry(message["id"].as_str().expect("id").to_owned())
                .or_default() += 1;
        }
    }
    let twice: Vec<&String> = in_log
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .take(5)
        .collect();
    assert!(twice.is_empty(), "appended more than once: {twice:?}");
    assert_eq!(in_log.len(), expected);

    // Lateness of the messages that fell due while the server was up after the restart.
    let mut late: Vec<u64> = seen
        .iter()
        .filter_map(|(id, at)| due.get(id).map(|d| at.saturating_sub(*d)))
        .collect();
    late.sort_unstable();
    let pct = |p: f64| late[((late.len() as f64 * p) as usize).min(late.len() - 1)];
    println!(
        "delay lateness over {} messages (includes the restart gap): p50 {} ms, p99 {} ms, max {} ms",
        late.len(),
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );
    let early = seen
        .iter()
        .filter(|(id, at)| due.get(*id).is_some_and(|d| *at < d))
        .count();
    let not_cancelled = due.keys().filter(|id| !cancelled.contains(*id));
    let lost = not_cancelled.filter(|id| !seen.contains_key(*id)).count();
    let stored_twice = in_log.values().filter(|n| **n > 1).count();
    CaseLine::new("S3", "delayed-across-kill-9")
        .must_be_zero("early", early as u64, seen.len() as u64)
        .must_be_zero("acked lost", lost as u64, expected as u64)
        .must_be_zero("stored twice", stored_twice as u64, in_log.len() as u64)
        .figure("cancelled", cancelled.len())
        .figure("max lateness ms", pct(1.0))
        .record();
}
