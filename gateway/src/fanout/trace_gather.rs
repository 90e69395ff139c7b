//! Message lookups (API.md "Looking a message up") in a cluster whose replication factor is
//! below the node count: this node's broker answers from the partitions it holds, so a
//! lookup asks the holders of the others and answers as if it held them all.
//!
//! - [`lacked_partitions`]: the partitions to ask for; none on a single node, when this node
//!   holds every partition, and for a forwarded lookup (a node asked by another answers from
//!   what it holds only: one hop, no loops).
//! - [`ask_holders`]: for each lacked partition, one node holding it (its leader as the
//!   metadata records it first; the next holder when one fails), the client's request sent
//!   as it came (its path and query, its credentials: the holder applies the caller's
//!   visibility itself) with `Wharf-Forwarded` ([`crate::fanout::peer::call_peer`]), one request
//!   per node, all at once, each under [`LOOKUP_PEER_TIMEOUT`]. Partitions none of whose holders
//!   gave a usable answer are reported, so the route answers 503 `not_leader` rather than a
//!   false 404 or a short list.
//! - By id the first holder that found the message answers ([`found_or_not`]); by key
//!   [`merge_by_key`] merges the holders' messages with this node's own.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use broker_core::BrokerError;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::api::trace::KeyedMessage;
use crate::app::AppState;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::fanout::peer::{PeerAnswer, call_peer};
use crate::http::codes;

/// Longest a lookup waits for another node's answer. A node answers a lookup with one
/// catch-up round of its trace index and a bounded read (at most
/// [`broker_core::broker::MAX_ID_MATCHES`] or [`broker_core::broker::MAX_KEY_LOOKUP`]
/// records), well under a second even when loaded; 5 s cuts off only a node that took the
/// call and hangs, and leaves room within the default `request_timeout_ms` (30 s) to ask
/// the next holder.
pub(crate) const LOOKUP_PEER_TIMEOUT: Duration = Duration::from_secs(5);

/// The partitions of `topic` this node holds no replica of, when a lookup with `headers`
/// must ask other nodes for them; `None` when it answers from what it holds: on a single
/// node, for a forwarded lookup, and when it holds every partition.
pub(crate) fn lacked_partitions(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
) -> Result<Option<Vec<u32>>, BrokerError> {
    if state.cluster.is_none() || headers.contains_key(FORWARDED_HEADER) {
        return Ok(None);
    }
    let count = state.broker.partition_leaders(topic)?.len();
    let lacked: Vec<u32> = (0u32..)
        .take(count)
        .filter(|p| !state.broker.holds_partition(topic, *p))
        .collect();
    Ok((!lacked.is_empty()).then_some(lacked))
}

/// One holder's usable answer, and the lacked partitions it was asked for.
#[derive(Debug)]
pub(crate) struct HolderAnswer {
    /// The partitions it answered for.
    pub partitions: Vec<u32>,
    /// Its status.
    pub status: StatusCode,
    /// Its body.
    pub body: Bytes,
}

/// What the holders of the lacked partitions answered.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    /// The usable answers, one per holder asked.
    pub answers: Vec<HolderAnswer>,
    /// The lacked partitions no holder gave a usable answer for.
    pub unanswered: Vec<u32>,
}

impl Gathered {
    /// The `not_leader` refusal naming the partitions of `topic` no holder answered for.
    pub(crate) fn unavailable(&self, topic: &str) -> BrokerError {
        let partitions: Vec<String> = self.unanswered.iter().map(u32::to_string).collect();
        BrokerError::NotLeader {
            what: format!(
                "the nodes holding partition(s) {} of topic '{topic}' (they could not be asked)",
                partitions.join(", ")
            ),
            leader: None,
        }
    }
}

/// Sends `GET path_and_query` with the client's `headers` to one holder of each partition
/// of `topic` in `lacked` (see the module's map); an answer `usable` refuses (unreachable,
/// timed out, or a status it does not take) sends its partitions to their next holder.
pub(crate) async fn ask_holders(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
    lacked: &[u32],
    path_and_query: &str,
    usable: impl Fn(&PeerAnswer) -> bool,
) -> Gathered {
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let holders: BTreeMap<u32, Vec<u64>> = lacked
        .iter()
        .map(|p| {
            let nodes = state.broker.partition_holders(topic, *p);
            (*p, nodes.into_iter().filter(|n| Some(*n) != me).collect())
        })
        .collect();
    let mut gathered = Gathered::default();
    let mut failed: BTreeSet<u64> = BTreeSet::new();
    let mut wanted: Vec<u32> = lacked.to_vec();
    while !wanted.is_empty() {
        let mut round: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for partition in wanted.drain(..) {
            let next = holders
                .get(&partition)
                .and_then(|nodes| nodes.iter().find(|n| !failed.contains(n)));
            match next {
                Some(node) => round.entry(*node).or_default().push(partition),
                None => gathered.unanswered.push(partition),
            }
        }
        let asks = round
            .keys()
            .map(|node| ask(state, headers, *node, path_and_query));
        let answers = join_all(asks).await;
        for ((node, partitions), answer) in round.into_iter().zip(answers) {
            match answer.filter(|a| usable(a)) {
                Some(answer) => gathered.answers.push(HolderAnswer {
                    partitions,
                    status: answer.status,
                    body: answer.body,
                }),
                None => {
                    failed.insert(node);
                    wanted.extend(partitions);
                }
            }
        }
    }
    gathered.unanswered.sort_unstable();
    gathered
}

/// Node `node`'s answer to `GET path_and_query`; `None` (logged) when it gave none within
/// [`LOOKUP_PEER_TIMEOUT`].
async fn ask(
    state: &AppState,
    headers: &HeaderMap,
    node: u64,
    path_and_query: &str,
) -> Option<PeerAnswer> {
    let call = call_peer(
        state,
        headers,
        node,
        Method::GET,
        path_and_query,
        Bytes::new(),
    );
    match tokio::time::timeout(LOOKUP_PEER_TIMEOUT, call).await {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(error)) => {
            tracing::debug!(%error, "a partition's holder could not be asked for a lookup");
            None
        }
        Err(_) => {
            tracing::debug!(node, "a partition's holder did not answer a lookup in time");
            None
        }
    }
}

/// Whether a holder's answer to a lookup by id settles its partitions: it found the message,
/// or it holds no message of that id.
pub(crate) fn found_or_not(answer: &PeerAnswer) -> bool {
    #[derive(Deserialize)]
    struct Refusal {
        code: String,
    }
    match answer.status {
        StatusCode::OK => true,
        StatusCode::NOT_FOUND => serde_json::from_slice::<Refusal>(&answer.body)
            .is_ok_and(|r| r.code == codes::MESSAGE_NOT_FOUND.code),
        _ => false,
    }
}

/// Whether a holder's answer to a key lookup is one (its messages parse).
pub(crate) fn key_answer(answer: &PeerAnswer) -> bool {
    answer.status == StatusCode::OK && parse_listed(&answer.body).is_some()
}

/// This node's own messages of a key lookup (`held`, from the partitions it holds) and those
/// the holders in `gathered` answered for the partitions each was asked for, newest first as
/// the broker orders them, at most `limit`.
pub(crate) fn merge_by_key(
    held: Vec<KeyedMessage>,
    gathered: &Gathered,
    limit: usize,
) -> Vec<ListedMessage> {
    let mut messages: Vec<(ListedAt, ListedMessage)> = held
        .into_iter()
        .map(|m| (ListedAt::of(&m), ListedMessage::Here(m)))
        .collect();
    for answer in &gathered.answers {
        let theirs = parse_listed(&answer.body).unwrap_or_default();
        messages.extend(
            theirs
                .into_iter()
                .filter(|(at, _)| answer.partitions.contains(&at.partition))
                .map(|(at, raw)| (at, ListedMessage::There(raw))),
        );
    }
    messages.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    messages.truncate(limit);
    messages.into_iter().map(|(_, m)| m).collect()
}

/// Where a listed message sorts: newest first is the greatest first, as the broker orders
/// its own (publish time, then partition, then offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub(crate) struct ListedAt {
    /// Its publish time.
    #[serde(rename = "publish_time_ms")]
    pub time_ms: u64,
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
}

impl ListedAt {
    fn of(message: &KeyedMessage) -> ListedAt {
        ListedAt {
            time_ms: message.message.publish_time_ms,
            partition: message.partition,
            offset: message.message.offset,
        }
    }
}

/// A message of a key lookup: found here, or in another node's answer (sent on as it came).
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ListedMessage {
    /// Found in a partition this node holds.
    Here(KeyedMessage),
    /// In another node's answer.
    There(Box<RawValue>),
}

/// The messages of another node's key answer, each with where it sorts; `None` when it is
/// not one.
fn parse_listed(body: &[u8]) -> Option<Vec<(ListedAt, Box<RawValue>)>> {
    #[derive(Deserialize)]
    struct Listed {
        messages: Vec<Box<RawValue>>,
    }
    let listed: Listed = serde_json::from_slice(body).ok()?;
    listed
        .messages
        .into_iter()
        .map(|raw| Some((serde_json::from_str::<ListedAt>(raw.get()).ok()?, raw)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::api::partitions::LogMessage;

    fn keyed(partition: u32, offset: u64, time_ms: u64) -> KeyedMessage {
        KeyedMessage {
            partition,
            message: LogMessage {
                offset,
                id: format!("p{partition}-{offset}"),
                key: Some("k".into()),
                value: Some(String::new()),
                value_base64: None,
                headers: BTreeMap::new(),
                tags: Vec::new(),
                publish_time_ms: time_ms,
                traceparent: None,
                tracestate: None,
            },
        }
    }

    fn holder(partitions: &[u32], messages: &[KeyedMessage]) -> HolderAnswer {
        let body = serde_json::json!({"topic": "t", "key": "k", "messages": messages});
        HolderAnswer {
            partitions: partitions.to_vec(),
            status: StatusCode::OK,
            body: Bytes::from(serde_json::to_vec(&body).unwrap_or_default()),
        }
    }

    fn ids(listed: &[ListedMessage]) -> Vec<String> {
        let text = serde_json::to_value(listed).unwrap_or_default();
        text.as_array()
            .into_iter()
            .flatten()
            .map(|m| m["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_key_lookup_merges_newest_first_across_nodes_and_cuts_to_the_limit() {
        let here = vec![keyed(0, 4, 40), keyed(0, 1, 10)];
        let gathered = Gathered {
            answers: vec![
                holder(&[1], &[keyed(1, 7, 50), keyed(1, 2, 20)]),
                holder(&[2], &[keyed(2, 3, 40), keyed(2, 0, 5)]),
            ],
            unanswered: Vec::new(),
        };
        let merged = merge_by_key(here, &gathered, 4);
        assert_eq!(ids(&merged), ["p1-7", "p2-3", "p0-4", "p1-2"]);
    }

    #[test]
    fn a_holder_s_messages_count_only_for_the_partitions_it_was_asked_for() {
        let gathered = Gathered {
            answers: vec![holder(&[1], &[keyed(0, 9, 90), keyed(1, 1, 10)])],
            unanswered: Vec::new(),
        };
        let merged = merge_by_key(vec![keyed(0, 9, 90)], &gathered, 10);
        assert_eq!(ids(&merged), ["p0-9", "p1-1"]);
    }
}
