//! In a cluster a subscription's partitions are served by their leaders, which may be several
//! nodes: a receive on any node gathers from each of them and answers as one response, and
//! an ack, nack or extend sends each receipt to the leader of its partition.
//!
//! - Receive: when one node leads every partition, the request goes there whole (a remote
//!   one long-polls there; see [`crate::fanout::forward`]). Otherwise rounds take what each leader
//!   has now (`wait_ms` 0): this node's own partitions first, then the other leaders in this
//!   node's zone at once, then, for what is still wanted, the leaders in other zones at once
//!   (nearby consume: a zone that is down or empty is fallen back from), all over HTTP
//!   ([`crate::fanout::peer`]: the client's credentials and `Wharf-Forwarded`), each asked for its
//!   share of what is still wanted so that a round never takes more than asked. A round
//!   answers with its own partitions' messages alone when every other leader had nothing
//!   within the last 50 ms, and asks this zone's other leaders before its own partitions
//!   when one was not asked for as long ([`crate::fanout::gather_looks`]: a millisecond saved per
//!   light-load receive, and no partition starved by a backlog on this node's). An empty
//!   round waits, once every leader was asked since the last wait, for the next commit to
//!   any of the topic's partitions held here (a node hears of those only) or
//!   [`GATHER_POLL_MS`] (a lease ending or a retry falling due on another leader commits
//!   nothing), until `wait_ms` has passed. A leader's call that does not answer within
//!   [`remote_call_timeout`] counts as an empty answer, so one hung leader, in this node's
//!   zone or another, does not hold the receive up. A stream (SSE) opened on a node that does
//!   not lead every partition receives by the same rounds ([`gather_messages`]).
//! - Settle: receipts are grouped by their partition's leader; this node settles its own
//!   group, and each other group goes to its leader. A leader that cannot be reached makes the
//!   answer 503 `not_leader` (the client retries; receipts settled meanwhile then report
//!   `receipt_invalid`, their messages being settled).
//!
//! - Seek: each leader moves the partitions it leads (explicit offsets go to their
//!   partition's leader), and the positions are merged.
//!
//! A request that was forwarded here is never gathered again (one hop).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use broker_core::BrokerError;
use broker_core::broker::{ReceiptFailure, ReceiveRequest, SeekTarget, SettleOutcome};
use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api::SubscriptionPath;
use crate::app::AppState;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::fanout::gather_looks::{RoundPlan, stale_first};
use crate::fanout::peer::{PeerAnswer, call_peer};
use crate::json::message::{self, DeliveryParts};

/// Longest an empty gathering round waits before asking the other leaders again: the lag a
/// redelivery on another leader (a lease ended, a retry fell due) may add to a long-poll.
pub(crate) const GATHER_POLL_MS: u64 = 200;

/// How much longer than the wait it asks for a call to another leader may take before the
/// gather goes on without it: a leader answers a receive that waits for nothing
/// within tens of milliseconds (its leases' commit) even on a loaded node, so 500 ms cuts off
/// only a leader that accepted the call and hangs (paused, overloaded), which would otherwise
/// hold the whole receive for [`crate::fanout::forward::FORWARD_TIMEOUT`]. Messages a cut-off call
/// leased come back when their lease ends, as with any answer lost on the way.
pub(crate) const REMOTE_CALL_MARGIN_MS: u64 = 500;

/// The deadline of one call to another leader that long-polls for `wait_ms` there: the wait
/// and [`REMOTE_CALL_MARGIN_MS`], never shorter than the long-poll it asks for.
pub(crate) fn remote_call_timeout(wait_ms: u64) -> Duration {
    Duration::from_millis(wait_ms.saturating_add(REMOTE_CALL_MARGIN_MS))
}

/// What one receive asks for.
#[derive(Debug, Clone)]
pub(crate) struct ReceiveAsk {
    /// At most this many messages.
    pub max_messages: usize,
    /// Long-poll for at most this long.
    pub wait_ms: u64,
    /// The lease asked for.
    pub ack_timeout_ms: Option<u64>,
    /// The retry-safe attempt id.
    pub attempt_id: Option<String>,
    /// Who receives ([`crate::http::consumed_by`]), named in the events of this node's own
    /// deliveries; the other leaders name the consumer as they see it (the forwarded
    /// credentials' principal, this node, and the client's address this node passed on in
    /// `Wharf-Client-Address`).
    pub consumer: Option<std::sync::Arc<broker_core::Origin>>,
}

/// The leader of each of `topic`'s partitions when a request with `headers` must be gathered
/// from (or scattered to) several nodes; `None` when this node serves it as a single node
/// does: on a single node, for a forwarded request, and when one node (or none, during an
/// election) leads every partition; the broker then serves it or answers `not_leader` naming
/// that leader, and [`crate::fanout::forward`] sends the whole request there.
pub(crate) fn leaders_to_gather(
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

/// The leader of each of `topic`'s partitions when a stream opened with `headers` must
/// gather its messages (see [`gather_messages`]); `None` when it receives here as on a single
/// node: on a single node, for a forwarded request, and when this node leads every partition.
/// Unlike [`leaders_to_gather`], a stream is never sent whole to another node (forwarding
/// reads whole answers), so it gathers even when one other node leads everything.
pub(crate) fn leaders_to_stream_from(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
) -> Result<Option<Vec<Option<u64>>>, BrokerError> {
    let Some(cluster) = state.cluster.as_ref() else {
        return Ok(None);
    };
    if headers.contains_key(FORWARDED_HEADER) {
        return Ok(None);
    }
    let me = Some(cluster.node_id());
    let leaders = state.broker.partition_leaders(topic)?;
    Ok((!leaders.iter().all(|l| *l == me)).then_some(leaders))
}

/// One message a gather took from a leader: its receipt and its JSON object, as a receive
/// reply lists it (and an SSE `message` event carries it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GatheredMessage {
    /// The receipt that settles it.
    pub receipt: String,
    /// The message's JSON text.
    pub json: Vec<u8>,
}

#[derive(Deserialize)]
struct Gathered<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct GatheredReceipt {
    receipt: String,
}

/// Gathers a receive from the nodes `leaders` names (see [`leaders_to_gather`]); returns the
/// reply's JSON body.
pub(crate) async fn gather_receive(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    memory: Option<broker_core::memory::AnswerMemory>,
    leaders: Vec<Option<u64>>,
) -> Result<Vec<u8>, BrokerError> {
    let messages = gather_messages(state, headers, path, ask, memory, leaders).await?;
    let size: usize = messages.iter().map(|m| m.json.len() + 1).sum();
    let mut reply = Vec::with_capacity(size + b"{\"messages\":[]}".len());
    reply.extend_from_slice(b"{\"messages\":[");
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            reply.push(b',');
        }
        reply.extend_from_slice(&message.json);
    }
    reply.extend_from_slice(b"]}");
    Ok(reply)
}

/// The `wait_ms` of each leader's part of a gathered receive: none, the gather itself waits
/// between rounds (see the module's map).
const REMOTE_WAIT_MS: u64 = 0;

/// Where each gather on this node starts its turns (see [`shares`]): when a round wants fewer
/// messages than there are leaders to ask, a different leader goes first each round, and
/// each gather starts with another.
static SHARE_TURN: AtomicUsize = AtomicUsize::new(0);

/// Takes what the nodes `leaders` names hold for the subscription now, in rounds (see the
/// module's map), until some message is taken or `ask.wait_ms` has passed. This node's own
/// partitions are received first, unless the round's plan says otherwise
/// ([`crate::fanout::gather_looks::RoundPlan`]); the others' leaders are asked at once, each for
/// its share of what is still wanted ([`shares`]), so the round never takes more than
/// `ask.max_messages`. An empty round waits only once every leader was asked since the last
/// wait.
pub(crate) async fn gather_messages(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    memory: Option<broker_core::memory::AnswerMemory>,
    mut leaders: Vec<Option<u64>>,
) -> Result<Vec<GatheredMessage>, BrokerError> {
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let signal = state.broker.commit_signal(&path.topic)?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ask.wait_ms);
    let mut asked = BTreeSet::new();
    let mut turn = SHARE_TURN.fetch_add(1, Ordering::Relaxed);
    loop {
        let committed = signal.notified();
        tokio::pin!(committed);
        committed.as_mut().enable();
        let remotes: Vec<u64> = leaders
            .iter()
            .flatten()
            .copied()
            .filter(|l| Some(*l) != me)
            .collect::<BTreeSet<u64>>()
            .into_iter()
            .collect();
        let here = leaders.contains(&me);
        // Leaders in this node's zone first; the others only for what those did not have
        // (nothing there, or their zone is down).
        let near = near_leaders(state, &path.topic);
        let (close, far): (Vec<u64>, Vec<u64>) = remotes
            .iter()
            .copied()
            .partition(|node| near.contains(node));
        let plan = if here && !remotes.is_empty() {
            let now = std::time::Instant::now();
            let looks = &state.remote_looks;
            looks.plan(&path.topic, &path.sub, &close, &far, now)
        } else {
            RoundPlan::LocalFirst
        };
        let mut messages = Vec::new();
        let close_first = match &plan {
            RoundPlan::CloseFirst(stale) => Some(stale),
            _ => None,
        };
        if here && close_first.is_none() {
            messages = receive_here(state, path, ask, ask.max_messages, memory.clone()).await?;
            if plan == RoundPlan::LocalOnlyIfAny && !messages.is_empty() {
                return Ok(messages);
            }
        }
        let wanted = ask.max_messages.saturating_sub(messages.len());
        // A round asking the other leaders first gives what is left over after even shares
        // to those not asked lately.
        let round = match close_first {
            Some(stale) => shares(wanted, &stale_first(&close, stale), 0),
            None => shares(wanted, &close, turn),
        };
        messages.extend(ask_leaders(state, headers, path, ask, &round, here, &mut asked).await);
        let wanted = ask.max_messages.saturating_sub(messages.len());
        if here && close_first.is_some() && wanted > 0 {
            match receive_here(state, path, ask, wanted, memory.clone()).await {
                Ok(mine) => messages.extend(mine),
                Err(error) if messages.is_empty() => return Err(error),
                // What the other leaders handed out is answered; this node's error is
                // met again by the client's next receive.
                Err(error) => tracing::debug!(%error, "this node's part of a gather failed"),
            }
        }
        let wanted = ask.max_messages.saturating_sub(messages.len());
        let round = shares(wanted, &far, turn);
        messages.extend(ask_leaders(state, headers, path, ask, &round, here, &mut asked).await);
        turn = turn.wrapping_add(1);
        let now = tokio::time::Instant::now();
        if !messages.is_empty() || now >= deadline || state.is_draining() {
            return Ok(messages);
        }
        if remotes.iter().all(|node| asked.contains(node)) {
            asked.clear();
            let wake = deadline.min(now + Duration::from_millis(GATHER_POLL_MS));
            tokio::select! {
                () = &mut committed => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        }
        leaders = state.broker.partition_leaders(&path.topic)?;
    }
}

/// Asks each node of `round` at once for its share of the subscription's messages (`wait_ms`
/// 0) and adds it to `asked`; what they handed out. When `here` (this node leads a partition
/// too), each answer is remembered for the next rounds' plans ([`crate::fanout::gather_looks`]).
async fn ask_leaders(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    round: &[(u64, usize)],
    here: bool,
    asked: &mut BTreeSet<u64>,
) -> Vec<GatheredMessage> {
    // Each call ends within `remote_call_timeout`, so a leader that hangs delays the
    // receive by that, not by the forward timeout.
    let limit = remote_call_timeout(REMOTE_WAIT_MS);
    let looked = std::time::Instant::now();
    let answers = join_all(round.iter().map(|(node, share)| async move {
        let call = receive_there(state, headers, *node, path, ask, *share);
        tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
            tracing::debug!(node, "a leader did not answer a gather in time");
            Vec::new()
        })
    }))
    .await;
    let mut messages = Vec::new();
    let mut looks = Vec::with_capacity(round.len());
    for ((node, _), answer) in round.iter().zip(answers) {
        asked.insert(*node);
        looks.push((*node, answer.is_empty()));
        messages.extend(answer);
    }
    if here {
        state
            .remote_looks
            .record(&path.topic, &path.sub, looked, &looks);
    }
    messages
}

/// The nodes leading a partition of `topic` in this node's zone (see
/// [`broker_core::broker::LeaderNear`]); none when the topic is unknown here.
fn near_leaders(state: &AppState, topic: &str) -> BTreeSet<u64> {
    state
        .broker
        .partition_leaders_near(topic)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.near)
        .filter_map(|l| l.leader)
        .collect()
}

/// How many of `wanted` messages to ask each of `nodes` for: as evenly as they divide, the
/// remainder to the nodes from position `turn` on (wrapping); nodes with a share of none are
/// left out.
pub(crate) fn shares(wanted: usize, nodes: &[u64], turn: usize) -> Vec<(u64, usize)> {
    let count = nodes.len();
    if count == 0 {
        return Vec::new();
    }
    let (base, extra) = (wanted / count, wanted % count);
    nodes
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let rank = (index + count - turn % count) % count;
            (*node, base + usize::from(rank < extra))
        })
        .filter(|(_, share)| *share > 0)
        .collect()
}

/// What this node's own partitions hold now (`wait_ms` 0), at most `max_messages`.
async fn receive_here(
    state: &AppState,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    max_messages: usize,
    memory: Option<broker_core::memory::AnswerMemory>,
) -> Result<Vec<GatheredMessage>, BrokerError> {
    let request = ReceiveRequest {
        max_messages,
        wait_ms: 0,
        ack_timeout_ms: ask.ack_timeout_ms,
        attempt_id: ask.attempt_id.clone(),
        memory,
    };
    let consumer = ask.consumer.as_deref();
    let received = state
        .broker
        .receive_from(&path.topic, &path.sub, request, consumer)
        .await;
    match received {
        Ok(deliveries) => Ok(deliveries
            .into_iter()
            .map(|delivery| {
                let json = message::received_message(DeliveryParts::from(&delivery));
                GatheredMessage {
                    receipt: delivery.receipt,
                    json,
                }
            })
            .collect()),
        Err(BrokerError::NotLeader { .. }) => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// What node `node` holds now (`wait_ms` 0), at most `share` messages; nothing (logged) when
/// it cannot be asked or refuses.
async fn receive_there(
    state: &AppState,
    headers: &HeaderMap,
    node: u64,
    path: &SubscriptionPath,
    ask: &ReceiveAsk,
    share: usize,
) -> Vec<GatheredMessage> {
    let body = serde_json::json!({
        "max_messages": share,
        "wait_ms": REMOTE_WAIT_MS,
        "ack_timeout_ms": ask.ack_timeout_ms,
        "attempt_id": ask.attempt_id,
    });
    let Some(bytes) = ask_peer(state, headers, node, path, "receive", &body).await else {
        return Vec::new();
    };
    let Ok(gathered) = serde_json::from_slice::<Gathered<'_>>(&bytes) else {
        tracing::debug!(node, "a leader's receive answer did not parse");
        return Vec::new();
    };
    gathered
        .messages
        .into_iter()
        .filter_map(|message| {
            let text = message.get();
            match serde_json::from_str::<GatheredReceipt>(text) {
                Ok(parsed) => Some(GatheredMessage {
                    receipt: parsed.receipt,
                    json: text.as_bytes().to_vec(),
                }),
                // Its lease ends on its own and the message comes back.
                Err(error) => {
                    tracing::warn!(node, %error, "a leader's message had no receipt");
                    None
                }
            }
        })
        .collect()
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
    let url = format!(
        "/v1/topics/{}/subscriptions/{}/{action}",
        path.topic, path.sub
    );
    let body = Bytes::from(serde_json::to_vec(body).ok()?);
    match call_peer(state, headers, node, Method::POST, &url, body).await {
        Ok(PeerAnswer {
            status: StatusCode::OK,
            body,
            ..
        }) => Some(body),
        Ok(answer) => {
            let status = answer.status;
            tracing::debug!(node, %status, action, "a leader refused a gathered request");
            None
        }
        Err(error) => {
            tracing::debug!(%error, action, "a leader could not be asked");
            None
        }
    }
}

/// [`ask_peer`] for a part of a request that must succeed: the answer parsed, or 503
/// `not_leader` when node `node` could not be asked, refused, or answered something else.
pub(crate) async fn ask_leader<T: serde::de::DeserializeOwned>(
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
pub(crate) async fn scatter_settle<Fut>(
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
    settle_on_leaders(
        state, headers, path, receipts, &leaders, action, body_for, local,
    )
    .await
}

/// [`scatter_settle`] over the partition leaders `leaders` names (one per partition): this
/// node's share with `local`, each other leader's share by sending it `action`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn settle_on_leaders<Fut>(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    receipts: Vec<String>,
    leaders: &[Option<u64>],
    action: &str,
    body_for: impl Fn(&[String]) -> serde_json::Value,
    local: impl FnOnce(Vec<String>) -> Fut,
) -> Result<SettleOutcome, BrokerError>
where
    Fut: Future<Output = Result<SettleOutcome, BrokerError>>,
{
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
pub(crate) async fn scatter_seek(
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

#[cfg(test)]
mod tests {
    use super::shares;

    #[test]
    fn shares_divide_what_is_wanted_evenly_and_never_ask_for_more() {
        let nodes = [1, 2, 3];
        for wanted in 0..10 {
            for turn in 0..4 {
                let round = shares(wanted, &nodes, turn);
                let total: usize = round.iter().map(|(_, share)| share).sum();
                assert_eq!(total, wanted, "wanted {wanted}, turn {turn}: {round:?}");
                let (least, most) = round
                    .iter()
                    .fold((usize::MAX, 0), |(l, m), (_, s)| (l.min(*s), m.max(*s)));
                assert!(round.is_empty() || most - least <= 1, "{round:?}");
            }
        }
        assert_eq!(shares(5, &[], 0), vec![]);
    }

    #[test]
    fn when_fewer_are_wanted_than_there_are_nodes_each_turn_asks_the_next_node_first() {
        let nodes = [4, 7, 9];
        assert_eq!(shares(1, &nodes, 0), vec![(4, 1)]);
        assert_eq!(shares(1, &nodes, 1), vec![(7, 1)]);
        assert_eq!(shares(1, &nodes, 2), vec![(9, 1)]);
        assert_eq!(shares(1, &nodes, 3), vec![(4, 1)]);
        assert_eq!(shares(2, &nodes, 2), vec![(4, 1), (9, 1)]);
        assert_eq!(shares(4, &nodes, 1), vec![(4, 1), (7, 2), (9, 1)]);
    }
}
