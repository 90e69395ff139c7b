//! In a cluster a subscription's partitions are served by their leaders, which may be several
//! nodes: a receive on any node gathers from each of them and answers as one response, and
//! an ack, nack or extend sends each receipt to the leader of its partition.
//!
//! - Receive: when one node leads every partition, the request goes there whole (a remote
//!   one long-polls there; see [`crate::forward`]). Otherwise rounds take what each leader has
//!   now (`wait_ms` 0), this node's own partitions first, the others over HTTP with the
//!   client's credentials and `Wharf-Forwarded`; an empty round waits for the next commit to
//!   any of the topic's partitions held here (a node hears of those only) or
//!   [`GATHER_POLL_MS`] (a lease ending or a retry falling due on another leader commits
//!   nothing), until `wait_ms` has passed.
//! - Settle: receipts are grouped by their partition's leader; this node settles its own
//!   group, and each other group goes to its leader. A leader that cannot be reached makes the
//!   answer 503 `not_leader` (the client retries; receipts settled meanwhile then report
//!   `receipt_invalid`, their messages being settled).
//!
//! - Seek: each leader moves the partitions it leads (explicit offsets go to their
//!   partition's leader), and the positions are merged.
//!
//! A request that was forwarded here is never gathered again (one hop).

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use broker_core::BrokerError;
use broker_core::broker::{ReceiptFailure, ReceiveRequest, SeekTarget, SettleOutcome};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::app::AppState;
use crate::forward::{FORWARDED_HEADER, call};
use crate::message_json::{self, DeliveryParts};
use crate::routes::SubscriptionPath;

/// Longest an empty gathering round waits before asking the other leaders again: the lag a
/// redelivery on another leader (a lease ended, a retry fell due) may add to a long-poll.
pub const GATHER_POLL_MS: u64 = 200;

/// What one receive asks for.
#[derive(Debug, Clone)]
pub struct ReceiveAsk {
    /// At most this many messages.
    pub max_messages: usize,
    /// Long-poll for at most this long.
    pub wait_ms: u64,
    /// The lease asked for.
    pub ack_timeout_ms: Option<u64>,
    /// The retry-safe attempt id.
    pub attempt_id: Option<String>,
}

/// The leader of each of `topic`'s partitions when a request with `headers` must be gathered
/// from (or scattered to) several nodes; `None` when this node serves it as a single node
/// does: on a single node, for a forwarded request, and when one node (or none, during an
/// election) leads every partition; the broker then serves it or answers `not_leader` naming
/// that leader, and [`crate::forward`] sends the whole request there.
pub fn leaders_to_gather(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
) -> Result<Option<Vec<Option<u64>>>, BrokerError> {
    if state.cluster.is_none() || headers.contains_key(FORWARDED_HEADER) {
        return Ok(None);
    }
    let leaders = state.broker.partition_leaders(topic)?;
    let first = leaders.first().copied().flatten();
    Ok((!leaders.iter().all(|l| *l == first)).then_some(leaders))
}

#[derive(Deserialize)]
struct Gathered<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// Gathers a receive from the nodes `leaders` names (see [`leaders_to_gather`]); returns the
/// reply's JSON body.
pub async fn gather_receive(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    memory: Option<broker_core::memory::AnswerMemory>,
    mut leaders: Vec<Option<u64>>,
) -> Result<Vec<u8>, BrokerError> {
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let signal = state.broker.commit_signal(&path.topic)?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ask.wait_ms);
    loop {
        let committed = signal.notified();
        tokio::pin!(committed);
        committed.as_mut().enable();
        let mut reply = message_json::receive_reply(std::iter::empty::<DeliveryParts<'_>>());
        reply.truncate(reply.len() - 2); // `]}`
        let mut count = 0usize;
        if leaders.contains(&me) {
            let request = ReceiveRequest {
                max_messages: ask.max_messages,
                wait_ms: 0,
                ack_timeout_ms: ask.ack_timeout_ms,
                attempt_id: ask.attempt_id.clone(),
                memory: memory.clone(),
            };
            match state.broker.receive(&path.topic, &path.sub, request).await {
                Ok(deliveries) => {
                    let local =
                        message_json::receive_reply(deliveries.iter().map(DeliveryParts::from));
                    let items = &local[b"{\"messages\":[".len()..local.len() - 2];
                    if !items.is_empty() {
                        reply.extend_from_slice(items);
                        count += deliveries.len();
                    }
                }
                Err(BrokerError::NotLeader { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        let remotes: std::collections::BTreeSet<u64> = leaders
            .iter()
            .flatten()
            .copied()
            .filter(|l| Some(*l) != me)
            .collect();
        for node in remotes {
            let wanted = ask.max_messages.saturating_sub(count);
            if wanted == 0 {
                break;
            }
            let body = serde_json::json!({
                "max_messages": wanted,
                "wait_ms": 0,
                "ack_timeout_ms": ask.ack_timeout_ms,
                "attempt_id": ask.attempt_id,
            });
            let Some(bytes) = ask_peer(state, headers, node, path, "receive", &body).await else {
                continue;
            };
            let Ok(gathered) = serde_json::from_slice::<Gathered<'_>>(&bytes) else {
                tracing::debug!(node, "a leader's receive answer did not parse");
                continue;
            };
            for message in gathered.messages {
                if count > 0 {
                    reply.push(b',');
                }
                reply.extend_from_slice(message.get().as_bytes());
                count += 1;
            }
        }
        let now = tokio::time::Instant::now();
        if count > 0 || now >= deadline || state.is_draining() {
            reply.extend_from_slice(b"]}");
            return Ok(reply);
        }
        let wake = deadline.min(now + Duration::from_millis(GATHER_POLL_MS));
        tokio::select! {
            () = &mut committed => {}
            () = tokio::time::sleep_until(wake) => {}
        }
        leaders = state.broker.partition_leaders(&path.topic)?;
    }
}

/// Asks node `node` for `action` on the subscription with the client's `headers`; the body
/// of a 200 answer, or `None` (logged) for anything else.
async fn ask_peer(
    state: &AppState,
    headers: &HeaderMap,
    node: u64,
    path: &SubscriptionPath,
    action: &str,
    body: &serde_json::Value,
) -> Option<Bytes> {
    let cluster = state.cluster.as_ref()?;
    let address = cluster.public_addr(node)?;
    let url = format!(
        "http://{address}/v1/topics/{}/subscriptions/{}/{action}",
        path.topic, path.sub
    );
    let mut headers = headers.clone();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    let body = Bytes::from(serde_json::to_vec(body).ok()?);
    match call(&url, Method::POST, &headers, body, cluster.node_id()).await {
        Ok((StatusCode::OK, _, bytes)) => Some(bytes),
        Ok((status, _, _)) => {
            tracing::debug!(node, %status, action, "a leader refused a gathered request");
            None
        }
        Err(error) => {
            tracing::debug!(node, %error, action, "a leader could not be asked");
            None
        }
    }
}

/// [`ask_peer`] for a part of a request that must succeed: the answer parsed, or 503
/// `not_leader` when node `node` could not be asked, refused, or answered something else.
async fn ask_leader<T: serde::de::DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    node: u64,
    path: &SubscriptionPath,
    action: &str,
    body: &serde_json::Value,
) -> Result<T, BrokerError> {
    let Some(bytes) = ask_peer(state, headers, node, path, action, body).await else {
        return Err(BrokerError::NotLeader {
            what: format!("node {node}, leading a partition of topic '{}'", path.topic),
            leader: None,
        });
    };
    serde_json::from_slice(&bytes).map_err(|e| BrokerError::NotLeader {
        what: format!("node {node}'s answer ({e})"),
        leader: None,
    })
}

#[derive(Deserialize)]
struct RemoteSettle {
    #[serde(alias = "acked", alias = "nacked", alias = "extended")]
    settled: usize,
    failed: Vec<RemoteFailure>,
}

#[derive(Deserialize)]
struct RemoteFailure {
    receipt: String,
}

/// Settles `receipts`: this node's share with `local`, each other leader's share by sending
/// it `action` with the body `body_for` makes.
pub async fn scatter_settle<Fut>(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    receipts: Vec<String>,
    action: &str,
    body_for: impl Fn(&[String]) -> serde_json::Value,
    local: impl FnOnce(Vec<String>) -> Fut,
) -> Result<SettleOutcome, BrokerError>
where
    Fut: Future<Output = Result<SettleOutcome, BrokerError>>,
{
    let Some(leaders) = leaders_to_gather(state, headers, &path.topic)? else {
        return local(receipts).await;
    };
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let mut mine = Vec::new();
    let mut theirs: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for receipt in receipts {
        let leader = match state
            .broker
            .receipt_partition(&path.topic, &path.sub, &receipt)
        {
            Some(partition) => leaders.get(partition as usize).copied().flatten(),
            // Not a receipt of this subscription: this node reports it.
            None => me,
        };
        match leader {
            Some(node) if Some(node) != me => theirs.entry(node).or_default().push(receipt),
            Some(_) => mine.push(receipt),
            None => {
                return Err(BrokerError::NotLeader {
                    what: format!("a partition of topic '{}'", path.topic),
                    leader: None,
                });
            }
        }
    }
    let mut outcome = if mine.is_empty() {
        SettleOutcome::default()
    } else {
        local(mine).await?
    };
    for (node, share) in theirs {
        let answer: RemoteSettle =
            ask_leader(state, headers, node, path, action, &body_for(&share)).await?;
        outcome.succeeded += answer.settled;
        outcome.failed.extend(
            answer
                .failed
                .into_iter()
                .map(|f| (f.receipt, ReceiptFailure::Invalid)),
        );
    }
    Ok(outcome)
}

#[derive(Deserialize)]
struct RemoteSeek {
    positions: BTreeMap<String, u64>,
}

/// Seeks `target` on every leader of the topic's partitions (this node's own with
/// [`broker_core::Broker::seek_led`], the others over HTTP, explicit offsets split by their
/// partition's leader) and merges the positions each moved. A leader that cannot be reached
/// makes the answer 503 `not_leader`; the partitions of the others may have moved (a seek
/// repeated moves them to the same place).
pub async fn scatter_seek(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    target: SeekTarget,
    leaders: Vec<Option<u64>>,
) -> Result<BTreeMap<u32, u64>, BrokerError> {
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let mut shares: BTreeMap<u64, serde_json::Value> = BTreeMap::new();
    let mut local = None;
    match &target {
        SeekTarget::Offsets(offsets) => {
            let mut mine = BTreeMap::new();
            let mut theirs: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
            for (partition, offset) in offsets {
                match leaders.get(*partition as usize).copied() {
                    // Not a partition of the topic: this node reports it.
                    None => {
                        mine.insert(*partition, *offset);
                    }
                    Some(leader) if leader == me => {
                        mine.insert(*partition, *offset);
                    }
                    Some(Some(node)) => {
                        theirs
                            .entry(node)
                            .or_default()
                            .insert(partition.to_string(), *offset);
                    }
                    Some(None) => {
                        return Err(BrokerError::NotLeader {
                            what: format!("partition {partition} of topic '{}'", path.topic),
                            leader: None,
                        });
                    }
                }
            }
            if !mine.is_empty() {
                local = Some(SeekTarget::Offsets(mine));
            }
            for (node, offsets) in theirs {
                shares.insert(node, serde_json::json!({ "offsets": offsets }));
            }
        }
        other => {
            let body = match other {
                SeekTarget::Earliest => serde_json::json!({ "to": "earliest" }),
                SeekTarget::Latest => serde_json::json!({ "to": "latest" }),
                SeekTarget::Timestamp(at) => serde_json::json!({ "timestamp_ms": at }),
                SeekTarget::Offsets(_) => serde_json::Value::Null,
            };
            if leaders.contains(&me) {
                local = Some(target.clone());
            }
            for node in leaders.iter().flatten().filter(|n| Some(**n) != me) {
                shares.insert(*node, body.clone());
            }
            if leaders.contains(&None) {
                return Err(BrokerError::NotLeader {
                    what: format!("a partition of topic '{}'", path.topic),
                    leader: None,
                });
            }
        }
    }
    let mut positions = match local {
        Some(target) => {
            state
                .broker
                .seek_led(&path.topic, &path.sub, target)
                .await?
        }
        None => BTreeMap::new(),
    };
    for (node, body) in shares {
        let answer: RemoteSeek = ask_leader(state, headers, node, path, "seek", &body).await?;
        for (partition, offset) in answer.positions {
            if let Ok(number) = partition.parse::<u32>() {
                positions.insert(number, offset);
            }
        }
    }
    Ok(positions)
}
