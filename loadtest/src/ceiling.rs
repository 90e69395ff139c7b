//! The HTTP ceiling (`wharf-ceiling`): a bare axum app on the same paths as Wharf that parses
//! the same JSON bodies and answers replies of the same shape, with no storage, no leases and
//! no middleware. Whatever Wharf does beyond this is the cost of being a broker; this app is
//! the best the HTTP stack alone does on this machine.
//!
//! Produce replies give every message a made-up id and a counter offset; a receive returns
//! `max_messages` made-up 1 KiB messages with receipts as long as Wharf's; an ack acks every
//! receipt.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::wire;

/// Most messages one made-up receive returns (Wharf's `max_messages` bound).
pub const MAX_RECEIVE_MESSAGES: usize = 1000;
/// Length of a made-up receipt: Wharf's are 60 characters of base64.
const RECEIPT_CHARS: usize = 60;

/// Shared by the handlers: the next made-up offset, and the 1 KiB value receives return.
#[derive(Debug, Clone)]
pub struct CeilingState {
    next_offset: Arc<AtomicU64>,
    value: Arc<str>,
}

impl Default for CeilingState {
    fn default() -> Self {
        CeilingState {
            next_offset: Arc::new(AtomicU64::new(0)),
            value: wire::text_value(wire::MESSAGE_BYTES).into(),
        }
    }
}

/// The whole ceiling app.
pub fn app() -> Router {
    Router::new()
        .route("/healthz", get(ok))
        .route("/readyz", get(ok))
        .route("/v1/topics", post(create_topic))
        .route("/v1/topics/{topic}", get(describe_topic))
        .route("/v1/topics/{topic}/messages", post(produce))
        .route(
            "/v1/topics/{topic}/subscriptions",
            post(create_subscription),
        )
        .route(
            "/v1/topics/{topic}/subscriptions/{sub}/receive",
            post(receive),
        )
        .route("/v1/topics/{topic}/subscriptions/{sub}/ack", post(ack))
        .with_state(CeilingState::default())
}

async fn ok() -> &'static str {
    "ok"
}

/// A topic create, as Wharf takes it.
#[derive(Debug, Deserialize, Serialize)]
struct CreateTopic {
    name: String,
    #[serde(default)]
    partitions: Option<u32>,
}

async fn create_topic(Json(topic): Json<CreateTopic>) -> (StatusCode, Json<CreateTopic>) {
    (StatusCode::CREATED, Json(topic))
}

async fn describe_topic(Path(topic): Path<String>) -> Json<serde_json::Value> {
    Json(serde_json::json!({ "name": topic, "partitions": 1, "partition_stats": [] }))
}

/// A subscription create, as Wharf takes it.
#[derive(Debug, Deserialize, Serialize)]
struct CreateSubscription {
    name: String,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    ack_timeout_ms: Option<u64>,
}

async fn create_subscription(
    Json(sub): Json<CreateSubscription>,
) -> (StatusCode, Json<CreateSubscription>) {
    (StatusCode::CREATED, Json(sub))
}

/// A produce batch, parsed as Wharf parses it.
#[derive(Debug, Deserialize)]
struct ProduceRequest {
    messages: Vec<ProduceMessage>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code, reason = "parsed like Wharf does, then dropped: no storage")]
struct ProduceMessage {
    value: Option<String>,
    value_base64: Option<String>,
    key: Option<String>,
    headers: Option<std::collections::BTreeMap<String, String>>,
    tags: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
struct ProduceReply {
    messages: Vec<Produced>,
}

#[derive(Debug, Serialize)]
struct Produced {
    id: String,
    partition: u32,
    offset: u64,
}

async fn produce(
    State(state): State<CeilingState>,
    Json(request): Json<ProduceRequest>,
) -> Json<ProduceReply> {
    let count = request.messages.len() as u64;
    let first = state.next_offset.fetch_add(count, Ordering::Relaxed);
    let messages = (first..first + count)
        .map(|offset| Produced {
            id: made_up_id(offset),
            partition: 0,
            offset,
        })
        .collect();
    Json(ProduceReply { messages })
}

/// A receive, as Wharf takes it.
#[derive(Debug, Default, Deserialize)]
struct ReceiveRequest {
    max_messages: Option<usize>,
    #[allow(dead_code, reason = "parsed like Wharf does; nothing to wait for")]
    wait_ms: Option<u64>,
}

#[derive(Debug, Serialize)]
struct ReceiveReply {
    messages: Vec<Received>,
}

#[derive(Debug, Serialize)]
struct Received {
    receipt: String,
    id: String,
    partition: u32,
    offset: u64,
    key: Option<String>,
    #[serde(serialize_with = "shared_str")]
    value: Arc<str>,
    headers: std::collections::BTreeMap<String, String>,
    tags: Vec<String>,
    publish_time_ms: u64,
    delivery_attempt: u32,
}

async fn receive(
    State(state): State<CeilingState>,
    Json(request): Json<ReceiveRequest>,
) -> Json<ReceiveReply> {
    let count = request
        .max_messages
        .unwrap_or(10)
        .clamp(1, MAX_RECEIVE_MESSAGES) as u64;
    let first = state.next_offset.fetch_add(count, Ordering::Relaxed);
    let messages = (first..first + count)
        .map(|offset| Received {
            receipt: format!("{offset:0>RECEIPT_CHARS$}"),
            id: made_up_id(offset),
            partition: 0,
            offset,
            key: None,
            value: Arc::clone(&state.value),
            headers: Default::default(),
            tags: Vec::new(),
            publish_time_ms: 0,
            delivery_attempt: 1,
        })
        .collect();
    Json(ReceiveReply { messages })
}

#[derive(Debug, Deserialize)]
struct AckRequest {
    receipts: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AckReply {
    acked: usize,
    failed: Vec<String>,
}

async fn ack(Json(request): Json<AckRequest>) -> Json<AckReply> {
    Json(AckReply {
        acked: request.receipts.len(),
        failed: Vec::new(),
    })
}

fn shared_str<S: serde::Serializer>(value: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value)
}

/// An id as long as Wharf's (a UUID's 36 characters).
fn made_up_id(offset: u64) -> String {
    format!("00000000-0000-7000-8000-{offset:012x}")
}
