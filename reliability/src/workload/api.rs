//! The Wharf HTTP calls a workload makes, each with a timeout, and what their replies mean.

use std::time::Duration;

use reqwest::{Client, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::event::{NodeId, Offset, Outcome, Partition};

/// Bound on opening a TCP connection to a node: loopback connects in microseconds, so a node
/// that takes longer is paused or gone.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// What one call came back with.
#[derive(Debug)]
pub enum Reply<T> {
    /// A 2xx reply whose body was read.
    Ok(T),
    /// The connection could not be opened: the request was never sent.
    Refused(String),
    /// A reply other than 2xx, with its problem `code` when the body had one.
    Status {
        /// The HTTP status.
        status: u16,
        /// The problem+json `code`.
        code: Option<String>,
    },
    /// No answer that proves anything: a timeout, a reset, or a 2xx body that could not be read.
    Unknown {
        /// The HTTP status, if one arrived.
        status: Option<u16>,
        /// What went wrong.
        detail: String,
    },
}

/// The problem `code` of a 503 whose write may still be committed.
pub const UNKNOWN_OUTCOME: &str = "replication_timeout";

impl<T> Reply<T> {
    /// The HTTP status of the reply, if one arrived (`Ok` is 200).
    pub fn status(&self) -> Option<u16> {
        match self {
            Reply::Ok(_) => Some(200),
            Reply::Refused(_) => None,
            Reply::Status { status, .. } => Some(*status),
            Reply::Unknown { status, .. } => *status,
        }
    }

    /// The problem `code` of a refusal, when it gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Reply::Status { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// What the reply proves about a write: `ok`; `fail` when it was never sent, or refused
    /// with a 4xx or a 503 (Wharf answers 503 `not_leader`, `overloaded` and `shutting_down`
    /// before storing anything); `info` for a 503 `replication_timeout` (proposed, not known
    /// committed), a timeout, a reset or any other 5xx.
    pub fn outcome(&self) -> Outcome {
        match self {
            Reply::Ok(_) => Outcome::Ok,
            Reply::Refused(_) => Outcome::Fail,
            Reply::Status { status: 503, code } if code.as_deref() == Some(UNKNOWN_OUTCOME) => {
                Outcome::Info
            }
            Reply::Status { status, .. } if (400..500).contains(status) || *status == 503 => {
                Outcome::Fail
            }
            Reply::Status { .. } | Reply::Unknown { .. } => Outcome::Info,
        }
    }

    /// Whether trying again later may succeed: a refused connection, a timeout, a 404 (the
    /// topic may not have reached this node yet), a 409 is not, nor any other 4xx.
    pub fn is_transient(&self) -> bool {
        match self {
            Reply::Ok(_) => false,
            Reply::Refused(_) | Reply::Unknown { .. } => true,
            Reply::Status { status, .. } => *status == 404 || *status >= 500,
        }
    }
}

/// Where a stored message landed, as the produce reply named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Placement {
    /// Its partition.
    pub partition: Partition,
    /// Its offset, when the reply gave one.
    pub offset: Option<Offset>,
    /// Whether the reply marked it a repeat of an id stored before (`"duplicate": true`):
    /// nothing was stored now, and the partition and offset are the first result's.
    #[serde(default)]
    pub duplicate: bool,
}

/// One message of a batch [`Api::produce_batch`] sends: its client `id` and its value (here
/// the same text) and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchMessage {
    /// The client id and the value (`p0-17`).
    pub value: String,
    /// The partitioning key.
    pub key: String,
}

#[derive(Debug, Deserialize)]
struct ProduceReply {
    messages: Vec<Placement>,
}

/// One leased message, as `receive` returns it (only the fields a history needs).
#[derive(Debug, Clone, Deserialize)]
pub struct Received {
    /// Acks this delivery.
    pub receipt: String,
    /// Its partition.
    pub partition: Partition,
    /// Its offset.
    pub offset: Offset,
    /// Its text value (absent for a binary one).
    pub value: Option<String>,
    /// 1 for the first delivery.
    pub delivery_attempt: u32,
}

#[derive(Debug, Deserialize)]
struct ReceiveReply {
    messages: Vec<Received>,
}

/// A receipt an ack could not confirm.
#[derive(Debug, Clone, Deserialize)]
pub struct FailedReceipt {
    /// The receipt.
    pub receipt: String,
    /// Why (`receipt_expired`…).
    pub code: String,
}

/// The reply to an ack.
#[derive(Debug, Clone, Deserialize)]
pub struct AckReply {
    /// How many receipts were acked.
    pub acked: usize,
    /// The receipts that were not.
    pub failed: Vec<FailedReceipt>,
}

/// One record of a partition read by offset.
#[derive(Debug, Clone, Deserialize)]
pub struct LogRecord {
    /// Its offset.
    pub offset: Offset,
    /// Its key.
    pub key: Option<String>,
    /// Its text value (absent for a binary one).
    pub value: Option<String>,
}

/// A page of a partition's log.
#[derive(Debug, Clone, Deserialize)]
pub struct Page {
    /// The records.
    pub messages: Vec<LogRecord>,
    /// The offset to read next.
    pub next_offset: Offset,
    /// The partition's end offset when it was read.
    pub end_offset: Offset,
    /// The node that served the read (`Wharf-Served-By`, in a cluster): a node whose
    /// replica is not in sync with its leader sends the read on.
    #[serde(skip)]
    pub served_by: Option<NodeId>,
}

/// One partition's Raft group as `GET /v1/cluster` shows it on the answering node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GroupSeen {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: Partition,
    /// The leader the answering node knows in `term` (none during an election).
    pub leader: Option<NodeId>,
    /// The answering node's current term (none when it holds no replica).
    pub term: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ClusterReply {
    partitions: Vec<GroupSeen>,
}

/// The header naming the node that served an offset read.
pub const SERVED_BY_HEADER: &str = "wharf-served-by";

#[derive(Debug, Deserialize)]
struct ProblemBody {
    code: Option<String>,
}

/// A pooled HTTP client with a timeout on every call.
#[derive(Debug, Clone)]
pub struct Api {
    client: Client,
    timeout: Duration,
}

impl Api {
    /// A client whose calls each end within `timeout` (a long-poll's wait is added to it).
    pub fn new(timeout: Duration) -> reqwest::Result<Api> {
        let client = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .no_proxy()
            .build()?;
        Ok(Api { client, timeout })
    }

    /// `POST /v1/topics`.
    pub async fn create_topic(&self, url: &str, topic: &str, partitions: u32) -> Reply<()> {
        let body = json!({ "name": topic, "partitions": partitions });
        let request = self.client.post(format!("{url}/v1/topics")).json(&body);
        self.call_ignoring_body(request).await
    }

    /// `POST /v1/topics/{topic}/subscriptions`, reading from the earliest offset, with
    /// `ack_timeout_ms` when given.
    pub async fn create_subscription(
        &self,
        url: &str,
        topic: &str,
        name: &str,
        ack_timeout_ms: Option<u64>,
    ) -> Reply<()> {
        let mut body = json!({ "name": name, "start": "earliest" });
        if let Some(lease) = ack_timeout_ms {
            body["ack_timeout_ms"] = json!(lease);
        }
        let request = self
            .client
            .post(format!("{url}/v1/topics/{topic}/subscriptions"))
            .json(&body);
        self.call_ignoring_body(request).await
    }

    /// `GET /v1/cluster`: every partition's group as the node at `url` sees it.
    pub async fn cluster_groups(&self, url: &str) -> Reply<Vec<GroupSeen>> {
        let request = self.client.get(format!("{url}/v1/cluster"));
        match self.call::<ClusterReply>(request, self.timeout).await {
            Reply::Ok(reply) => Reply::Ok(reply.partitions),
            Reply::Refused(e) => Reply::Refused(e),
            Reply::Status { status, code } => Reply::Status { status, code },
            Reply::Unknown { status, detail } => Reply::Unknown { status, detail },
        }
    }

    /// `POST /v1/topics/{topic}/messages?ack={ack}` with one message whose client `id` is its
    /// value.
    pub async fn produce(
        &self,
        url: &str,
        topic: &str,
        ack: &str,
        value: &str,
        key: &str,
    ) -> Reply<Placement> {
        let body = json!({ "messages": [{ "value": value, "key": key, "id": value }] });
        let request = self
            .client
            .post(format!("{url}/v1/topics/{topic}/messages"))
            .query(&[("ack", ack)])
            .json(&body);
        match self.call::<ProduceReply>(request, self.timeout).await {
            Reply::Ok(reply) => match reply.messages.first() {
                Some(placement) => Reply::Ok(*placement),
                None => Reply::Unknown {
                    status: Some(200),
                    detail: "a produce reply naming no message".to_owned(),
                },
            },
            Reply::Refused(e) => Reply::Refused(e),
            Reply::Status { status, code } => Reply::Status { status, code },
            Reply::Unknown { status, detail } => Reply::Unknown { status, detail },
        }
    }

    /// `POST /v1/topics/{topic}/messages?ack={ack}` with a JSON batch, each message's client
    /// `id` its value; the placements in request order. A 2xx reply naming another number of
    /// messages than were sent proves nothing: it is `Unknown`.
    pub async fn produce_batch(
        &self,
        url: &str,
        topic: &str,
        ack: &str,
        batch: &[BatchMessage],
    ) -> Reply<Vec<Placement>> {
        let messages: Vec<serde_json::Value> = batch
            .iter()
            .map(|m| json!({ "value": m.value, "key": m.key, "id": m.value }))
            .collect();
        let request = self
            .client
            .post(format!("{url}/v1/topics/{topic}/messages"))
            .query(&[("ack", ack)])
            .json(&json!({ "messages": messages }));
        match self.call::<ProduceReply>(request, self.timeout).await {
            Reply::Ok(reply) if reply.messages.len() == batch.len() => Reply::Ok(reply.messages),
            Reply::Ok(reply) => Reply::Unknown {
                status: Some(200),
                detail: format!(
                    "a produce reply naming {} messages for a batch of {}",
                    reply.messages.len(),
                    batch.len()
                ),
            },
            Reply::Refused(e) => Reply::Refused(e),
            Reply::Status { status, code } => Reply::Status { status, code },
            Reply::Unknown { status, detail } => Reply::Unknown { status, detail },
        }
    }

    /// `POST …/subscriptions/{sub}/receive`, long-polling up to `wait_ms`.
    pub async fn receive(
        &self,
        url: &str,
        topic: &str,
        subscription: &str,
        max_messages: u32,
        wait_ms: u64,
    ) -> Reply<Vec<Received>> {
        let body = json!({ "max_messages": max_messages, "wait_ms": wait_ms });
        let request = self
            .client
            .post(format!(
                "{url}/v1/topics/{topic}/subscriptions/{subscription}/receive"
            ))
            .json(&body);
        let timeout = self.timeout + Duration::from_millis(wait_ms);
        match self.call::<ReceiveReply>(request, timeout).await {
            Reply::Ok(reply) => Reply::Ok(reply.messages),
            Reply::Refused(e) => Reply::Refused(e),
            Reply::Status { status, code } => Reply::Status { status, code },
            Reply::Unknown { status, detail } => Reply::Unknown { status, detail },
        }
    }

    /// `POST …/subscriptions/{sub}/ack`.
    pub async fn ack(
        &self,
        url: &str,
        topic: &str,
        subscription: &str,
        receipts: &[String],
    ) -> Reply<AckReply> {
        let body = json!({ "receipts": receipts });
        let request = self
            .client
            .post(format!(
                "{url}/v1/topics/{topic}/subscriptions/{subscription}/ack"
            ))
            .json(&body);
        self.call(request, self.timeout).await
    }

    /// `GET /v1/topics/{topic}/partitions/{partition}/messages?offset=…&max=…`.
    pub async fn read_partition(
        &self,
        url: &str,
        topic: &str,
        partition: Partition,
        offset: Offset,
        max: u32,
    ) -> Reply<Page> {
        let request = self
            .client
            .get(format!(
                "{url}/v1/topics/{topic}/partitions/{partition}/messages"
            ))
            .query(&[("offset", offset), ("max", u64::from(max))]);
        let (reply, headers) = self.call_keeping_headers(request, self.timeout).await;
        let served_by = headers
            .as_ref()
            .and_then(|h| h.get(SERVED_BY_HEADER))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        match reply {
            Reply::Ok(page) => Reply::Ok(Page { served_by, ..page }),
            other => other,
        }
    }

    async fn call_ignoring_body(&self, request: RequestBuilder) -> Reply<()> {
        match self.call::<serde_json::Value>(request, self.timeout).await {
            Reply::Ok(_) => Reply::Ok(()),
            Reply::Refused(e) => Reply::Refused(e),
            Reply::Status { status, code } => Reply::Status { status, code },
            Reply::Unknown { status, detail } => Reply::Unknown { status, detail },
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Reply<T> {
        self.call_keeping_headers(request, timeout).await.0
    }

    /// [`Self::call`], with the reply's headers when one came.
    async fn call_keeping_headers<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
        timeout: Duration,
    ) -> (Reply<T>, Option<reqwest::header::HeaderMap>) {
        let response = match request.timeout(timeout).send().await {
            Ok(response) => response,
            Err(error) if error.is_connect() => return (Reply::Refused(error.to_string()), None),
            Err(error) => {
                return (
                    Reply::Unknown {
                        status: None,
                        detail: error.to_string(),
                    },
                    None,
                );
            }
        };
        let headers = response.headers().clone();
        (Self::read_reply(response).await, Some(headers))
    }

    async fn read_reply<T: DeserializeOwned>(response: reqwest::Response) -> Reply<T> {
        let status = response.status();
        let body = response.bytes().await;
        match (status.is_success(), body) {
            (true, Ok(body)) => serde_json::from_slice(&body).map_or_else(
                |error| Reply::Unknown {
                    status: Some(status.as_u16()),
                    detail: format!("unreadable reply body: {error}"),
                },
                Reply::Ok,
            ),
            (false, Ok(body)) => Reply::Status {
                status: status.as_u16(),
                code: problem_code(&body),
            },
            (_, Err(error)) => Reply::Unknown {
                status: Some(status.as_u16()),
                detail: format!("reply body cut: {error}"),
            },
        }
    }
}

fn problem_code(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ProblemBody>(body).ok()?.code
}

/// Whether `status` is 409: the thing to create exists already (an earlier try that timed
/// out may have created it).
pub fn is_conflict<T>(reply: &Reply<T>) -> bool {
    reply.status() == Some(StatusCode::CONFLICT.as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> Reply<()> {
        Reply::Status { status, code: None }
    }

    #[test]
    fn refusals_fail_and_everything_unproven_is_info() {
        assert_eq!(Reply::Ok(()).outcome(), Outcome::Ok);
        assert_eq!(Reply::<()>::Refused("x".into()).outcome(), Outcome::Fail);
        assert_eq!(status(400).outcome(), Outcome::Fail);
        assert_eq!(status(429).outcome(), Outcome::Fail);
        assert_eq!(status(503).outcome(), Outcome::Fail);
        assert_eq!(status(500).outcome(), Outcome::Info);
        assert_eq!(status(507).outcome(), Outcome::Info);
        let timeout = Reply::<()>::Unknown {
            status: None,
            detail: "timeout".into(),
        };
        assert_eq!(timeout.outcome(), Outcome::Info);
    }

    #[test]
    fn only_server_side_and_missing_things_are_retried() {
        assert!(status(503).is_transient());
        assert!(status(404).is_transient());
        assert!(!status(400).is_transient());
        assert!(!status(409).is_transient());
        assert!(is_conflict(&status(409)));
    }
}
