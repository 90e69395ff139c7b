//! In a cluster a JSON produce batch may hold messages for partitions led by different
//! nodes: the node that takes it splits it by leader, produces its own share, sends each
//! other leader its share, and answers as one reply in request order.
//!
//! - Routing ([`route`]): a keyed message goes to the leader of the partition its key hashes
//!   to, and an unkeyed one with a client `id` (in a topic that remembers ids) to that of the
//!   partition its id hashes to ([`broker_core::Broker::partition_for_message`], the same on
//!   every node, so every attempt of an id meets one leader); any other stays here when this node leads a partition of the topic, else goes to a leader in this
//!   node's zone, else to the leader of partition 0. A message whose partition has no leader (an election) refuses the whole
//!   batch with `not_leader` before anything is sent.
//! - The whole batch is checked first (parse, values, delays, then the broker's own checks),
//!   so bad input changes nothing on any node.
//! - A share goes to its leader as a JSON batch of the client's own message texts (no field
//!   is re-encoded or lost), with the client's query string (`?ack=`), headers and
//!   `Wharf-Forwarded` (its leader never splits it again: one hop). This node's share and the
//!   others' are sent at once.
//! - The reply lists every message's entry in request order, each as its leader answered
//!   it; `Wharf-Durability` is the weakest of the parts'
//!   ([`broker_core::broker::Durability::weakest`]).
//!
//! A part that fails makes the answer that part's error (its status and problem+json body;
//! this node's own share first, then the others by node id). **The other parts may have been
//! stored**: the client retries the batch with the same message `id`s, which the leaders
//! answer as duplicates (Wharf dedups client ids), so a retry stores nothing twice.

use std::collections::BTreeMap;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use broker_core::BrokerError;
use broker_core::broker::{AckMode, Durability, NewMessage, ProduceOutcome};
use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api::produce::{DURABILITY_HEADER, ProducedMessage};
use crate::app::AppState;
use crate::fanout::forward::{FORWARD_TIMEOUT, LeaderHint};
use crate::fanout::peer::{PeerAnswer, PeerFailure, call_peer};
use crate::http::problem::ApiError;

/// The messages of a JSON batch as the client wrote them.
#[derive(Deserialize)]
struct RawBatch<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// Where each message of a batch goes: the node, in request order.
///
/// `partitions` names each message's partition (`None`: unkeyed and without an id), `leaders` each partition's
/// leader, `nearby` the partitions an unkeyed message produced here goes to
/// ([`broker_core::Broker::unkeyed_partitions_of`]: those this node leads, else those led in
/// its zone); unkeyed messages go to the first one's leader, or partition 0's when there is
/// none. Errs with a partition that has no leader.
pub(crate) fn route(
    partitions: &[Option<u32>],
    leaders: &[Option<u64>],
    nearby: &[u32],
) -> Result<Vec<u64>, u32> {
    let unkeyed_partition = nearby.first().copied().unwrap_or(0);
    let unkeyed = leaders.get(unkeyed_partition as usize).copied().flatten();
    partitions
        .iter()
        .map(|partition| match partition {
            Some(p) => leaders.get(*p as usize).copied().flatten().ok_or(*p),
            None => unkeyed.ok_or(unkeyed_partition),
        })
        .collect()
}

/// One JSON batch split over its partitions' leaders.
pub(crate) struct Scatter<'a> {
    /// The node state.
    pub state: &'a AppState,
    /// The topic.
    pub topic: &'a str,
    /// The client's query string, sent on with every share.
    pub query: Option<&'a str>,
    /// The client's headers, sent on with every share.
    pub headers: &'a HeaderMap,
    /// When the reply is sent.
    pub ack: AckMode,
    /// The leader of each of the topic's partitions ([`crate::fanout::gather::leaders_to_gather`]).
    pub leaders: Vec<Option<u64>>,
    /// Who produced the batch ([`crate::http::produce_origin`]), stored with this node's share;
    /// the other leaders learn it from the headers sent on with theirs.
    pub origin: std::sync::Arc<broker_core::Origin>,
}

/// One part's answer: its entries (JSON texts, in its share's order) and durability.
struct Part {
    entries: Vec<String>,
    durability: Durability,
}

impl Scatter<'_> {
    /// Produces `messages` (parsed from `body`, checked by the gateway) on their leaders.
    /// `room` is asked whether the request may hold its parsed messages plus the shares'
    /// bodies (the memory budget); `false` refuses it (`overloaded`) before anything is sent.
    pub(crate) async fn produce(
        self,
        body: &Bytes,
        messages: Vec<NewMessage>,
        room: impl FnOnce(usize) -> bool,
    ) -> Result<Response, ApiError> {
        let broker = &self.state.broker;
        broker.check_batch(self.topic, &messages)?;
        let me = self.state.cluster.as_ref().map_or(0, |c| c.node_id());
        let nearby = broker.unkeyed_partitions_of(self.topic)?;
        let partitions = messages
            .iter()
            .map(|m| broker.partition_for_message(self.topic, m.key.as_deref(), m.id.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        let nodes = route(&partitions, &self.leaders, &nearby).map_err(|partition| {
            BrokerError::NotLeader {
                what: format!("partition {partition} of topic '{}'", self.topic),
                leader: None,
            }
        })?;
        let raw: RawBatch<'_> = serde_json::from_slice(body)
            .map_err(|e| ApiError::invalid(format!("the batch could not be split: {e}")))?;
        let mut mine = Vec::new();
        let mut theirs: BTreeMap<u64, Vec<&RawValue>> = BTreeMap::new();
        for ((message, text), node) in messages.into_iter().zip(raw.messages).zip(&nodes) {
            match *node == me {
                true => mine.push(message),
                false => theirs.entry(*node).or_default().push(text),
            }
        }
        let shares: Vec<(u64, Bytes)> = theirs
            .into_iter()
            .map(|(node, texts)| (node, batch_body(&texts)))
            .collect();
        let share_bytes = shares.iter().map(|(_, b)| b.len()).sum();
        if !room(share_bytes) {
            return Err(crate::limits::memory::OVERLOADED_MEMORY);
        }
        let local = async {
            match mine.is_empty() {
                true => Ok(None),
                false => {
                    let origin = Some(std::sync::Arc::clone(&self.origin));
                    let produced = broker.produce_from(self.topic, mine, self.ack, origin);
                    produced.await.map(Some)
                }
            }
        };
        let remotes = join_all(
            shares
                .into_iter()
                .map(|(node, share)| self.send(node, share)),
        );
        let (local, remotes) = futures_util::future::join(local, remotes).await;
        let mut parts: BTreeMap<u64, Part> = BTreeMap::new();
        match local {
            Ok(Some(outcome)) => {
                parts.insert(me, local_part(outcome));
            }
            Ok(None) => {}
            Err(error) => return Ok(unforwarded(ApiError::from(error).into_response())),
        }
        for remote in remotes {
            match remote {
                Ok((node, part)) => {
                    parts.insert(node, part);
                }
                Err(answer) => return Ok(answer),
            }
        }
        Ok(self.reply(&nodes, parts))
    }

    /// Sends `share` to `node`: its entries, or the answer to give the client.
    async fn send(&self, node: u64, share: Bytes) -> Result<(u64, Part), Response> {
        let no_leader = |what: String| {
            let error = BrokerError::NotLeader { what, leader: None };
            unforwarded(ApiError::from(error).into_response())
        };
        let query = self.query.map(|q| format!("?{q}")).unwrap_or_default();
        let path = format!("/v1/topics/{}/messages{query}", self.topic);
        let answer = call_peer(self.state, self.headers, node, Method::POST, &path, share).await;
        let PeerAnswer {
            status,
            headers,
            body: bytes,
        } = match answer {
            Ok(answer) => answer,
            Err(PeerFailure::NoAddress { .. }) => {
                return Err(no_leader(format!("node {node}'s address")));
            }
            Err(error @ PeerFailure::Unreachable { .. }) => {
                tracing::debug!(%error, "a leader could not be reached");
                return Err(no_leader(format!(
                    "node {node}, leading a partition of topic '{}'",
                    self.topic
                )));
            }
            Err(error @ PeerFailure::NoAnswer { .. }) => {
                tracing::debug!(%error, "a leader did not answer its share of a batch");
                let error = BrokerError::ReplicationTimeout {
                    what: format!("the share of the batch sent to node {node}"),
                    ms: u64::try_from(FORWARD_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
                };
                return Err(unforwarded(ApiError::from(error).into_response()));
            }
        };
        if !status.is_success() {
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            return Err(response);
        }
        let durability = headers
            .get(DURABILITY_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(Durability::from_header)
            .unwrap_or(Durability::None);
        let entries = serde_json::from_slice::<RawBatch<'_>>(&bytes)
            .map(|batch| batch.messages.iter().map(|m| m.get().to_owned()).collect())
            .map_err(|e| no_leader(format!("node {node}'s answer ({e})")))?;
        Ok((
            node,
            Part {
                entries,
                durability,
            },
        ))
    }

    /// The merged reply: every entry in request order (`nodes` names each message's node).
    fn reply(&self, nodes: &[u64], parts: BTreeMap<u64, Part>) -> Response {
        let durability = parts
            .values()
            .map(|p| p.durability)
            .reduce(Durability::weakest)
            .unwrap_or(Durability::None);
        let mut entries: BTreeMap<u64, std::vec::IntoIter<String>> = parts
            .into_iter()
            .map(|(node, part)| (node, part.entries.into_iter()))
            .collect();
        let mut body = b"{\"messages\":[".to_vec();
        for (index, node) in nodes.iter().enumerate() {
            let Some(entry) = entries.get_mut(node).and_then(Iterator::next) else {
                let error = BrokerError::NotLeader {
                    what: format!("node {node}'s answer (it had fewer entries than its share)"),
                    leader: None,
                };
                return unforwarded(ApiError::from(error).into_response());
            };
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(entry.as_bytes());
        }
        body.extend_from_slice(b"]}");
        let status = match self.ack {
            AckMode::None => StatusCode::ACCEPTED,
            AckMode::Leader | AckMode::All => StatusCode::OK,
        };
        let headers = [
            (
                HeaderName::from_static(DURABILITY_HEADER),
                HeaderValue::from_static(durability.as_str()),
            ),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ];
        (status, headers, body).into_response()
    }
}

/// A JSON batch of these message texts.
fn batch_body(texts: &[&RawValue]) -> Bytes {
    let size: usize = texts.iter().map(|t| t.get().len() + 1).sum();
    let mut body = Vec::with_capacity(size + b"{\"messages\":[]}".len());
    body.extend_from_slice(b"{\"messages\":[");
    for (index, text) in texts.iter().enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(text.get().as_bytes());
    }
    body.extend_from_slice(b"]}");
    Bytes::from(body)
}

/// This node's share's entries, written as the single-node reply writes them.
fn local_part(outcome: ProduceOutcome) -> Part {
    let entries = outcome
        .messages
        .into_iter()
        .map(|produced| {
            let entry = ProducedMessage {
                id: produced.id,
                partition: produced.partition,
                offset: produced.offset,
                deliver_at_ms: produced.deliver_at_ms,
                duplicate: produced.duplicate,
            };
            serde_json::to_string(&entry).unwrap_or_default()
        })
        .collect();
    Part {
        entries,
        durability: outcome.durability,
    }
}

/// An error answer the forwarding middleware must not send on whole: other parts of the
/// batch may be stored already.
fn unforwarded(mut response: Response) -> Response {
    response.extensions_mut().remove::<LeaderHint>();
    response
}

#[cfg(test)]
mod tests {
    use super::route;

    #[test]
    fn keyed_messages_go_to_their_partitions_leaders_and_unkeyed_ones_stay_here() {
        let leaders = [Some(1), Some(2), Some(3)];
        let partitions = [Some(0), None, Some(2), Some(1), None];
        // Node 2 leads partition 1.
        assert_eq!(route(&partitions, &leaders, &[1]), Ok(vec![1, 2, 3, 2, 2]));
    }

    #[test]
    fn unkeyed_messages_go_to_partition_zeros_leader_when_this_node_leads_nothing() {
        let leaders = [Some(1), Some(2), Some(1)];
        assert_eq!(route(&[None, Some(1)], &leaders, &[]), Ok(vec![1, 2]));
    }

    #[test]
    fn unkeyed_messages_go_to_a_leader_in_this_zone_when_this_node_leads_nothing() {
        let leaders = [Some(1), Some(2), Some(3)];
        // Node 4 leads nothing; node 3 (partition 2) is in its zone.
        assert_eq!(
            route(&[None, Some(0), None], &leaders, &[2]),
            Ok(vec![3, 1, 3])
        );
    }

    #[test]
    fn a_message_whose_partition_has_no_leader_refuses_the_batch() {
        let leaders = [Some(1), None, Some(2)];
        assert_eq!(route(&[Some(0), Some(1)], &leaders, &[0]), Err(1));
        assert_eq!(route(&[None], &[None, Some(2)], &[]), Err(0));
    }
}
