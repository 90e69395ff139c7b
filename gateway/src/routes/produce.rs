//! Producing: a JSON batch, or one raw message whose metadata travels in the query string and
//! `X-Wharf-Header-*` headers.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use broker_core::broker::{AckMode, NewMessage, ProduceOutcome};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::extract::{
    PathParams, QueryParams, RawBody, is_json_content_type, media_type, parse_json,
};
use crate::payload::decode_value;
use crate::problem::{ApiError, Problem};
use crate::routes::TopicPath;

/// Prefix of request headers that become message headers on a raw produce.
pub const HEADER_PREFIX: &str = "x-wharf-header-";
/// The reply header saying what the ack proves.
pub const DURABILITY_HEADER: &str = "wharf-durability";

/// When the reply is sent.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AckParam {
    /// At once, before the write (202).
    None,
    /// Once written to the leader's log and flushed per the fsync policy (the default).
    #[default]
    Leader,
    /// Once the leader and enough in-sync followers have it (on a single node, as `leader`).
    All,
}

impl From<AckParam> for AckMode {
    fn from(ack: AckParam) -> Self {
        match ack {
            AckParam::None => AckMode::None,
            AckParam::Leader => AckMode::Leader,
            AckParam::All => AckMode::All,
        }
    }
}

/// Query parameters of a produce.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProduceQuery {
    /// When the reply is sent: `none` (202), `leader` (default) or `all`.
    #[param(inline)]
    pub ack: Option<AckParam>,
    /// Raw bodies only: the message's partitioning key.
    pub key: Option<String>,
    /// Raw bodies only: comma-separated tags, e.g. `a,b`.
    pub tags: Option<String>,
}

/// A batch of messages to produce.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProduceRequest {
    /// 1 to 1000 messages.
    pub messages: Vec<ProduceMessage>,
}

/// One message to produce: exactly one of `value` and `value_base64`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProduceMessage {
    /// A text payload.
    pub value: Option<String>,
    /// A binary payload, standard base64.
    pub value_base64: Option<String>,
    /// Partitioning key: messages with the same key go to the same partition.
    pub key: Option<String>,
    /// Application headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// Tags.
    pub tags: Option<Vec<String>>,
}

/// Where one produced message went.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProducedMessage {
    /// Server-assigned, opaque message id.
    pub id: String,
    /// The partition it went to.
    pub partition: u32,
    /// Its offset in the partition; absent with `ack=none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// The reply to a produce, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProduceResponse {
    /// One entry per message, in request order.
    pub messages: Vec<ProducedMessage>,
}

/// Produce messages.
///
/// With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
/// 1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
/// when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
/// absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`
/// and `X-Wharf-Header-<name>` request headers carry its key, tags and headers. The reply
/// header `Wharf-Durability` says what the ack proves: `none`, `leader-written` or
/// `leader-fsynced`.
#[utoipa::path(post, path = "/v1/topics/{topic}/messages", tag = "messages",
    params(TopicPath, ProduceQuery),
    request_body(description = "A JSON batch, or one raw message of any other type",
        content((ProduceRequest = "application/json"), (String = "text/plain"),
            ("application/octet-stream"))),
    responses(
        (status = 200, description = "Stored as `ack` asked", body = ProduceResponse,
            headers(("Wharf-Durability" = String, description = "What the ack proves"))),
        (status = 202, description = "Accepted (`ack=none`): queued, not yet written",
            body = ProduceResponse,
            headers(("Wharf-Durability" = String, description = "`none`"))),
        (status = 400, description = "Malformed batch, bad value fields, bad query (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "A value over the topic's `max_message_bytes`, or the body over `max_body_bytes` (`message_too_large`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Back-pressure (`overloaded`); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full (`storage_full`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn produce(
    State(state): State<AppState>,
    PathParams(path): PathParams<TopicPath>,
    QueryParams(query): QueryParams<ProduceQuery>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let ack = query.ack.unwrap_or_default();
    let messages = if is_json_content_type(&headers) {
        json_messages(&query, &body)?
    } else {
        vec![raw_message(query, &headers, body)?]
    };
    let outcome = state
        .broker
        .produce(&path.topic, messages, ack.into())
        .await?;
    Ok(reply(ack, outcome))
}

fn json_messages(query: &ProduceQuery, body: &[u8]) -> Result<Vec<NewMessage>, ApiError> {
    if query.key.is_some() || query.tags.is_some() {
        return Err(ApiError::invalid(
            "the key and tags query parameters apply to raw bodies only; put them in the JSON messages",
        ));
    }
    let request: ProduceRequest = parse_json(body)?;
    request
        .messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| {
            let (value, binary) = decode_value(index, message.value, message.value_base64)?;
            Ok(NewMessage {
                key: message.key,
                value,
                binary,
                headers: message.headers.unwrap_or_default().into_iter().collect(),
                tags: message.tags.unwrap_or_default(),
            })
        })
        .collect()
}

fn raw_message(
    query: ProduceQuery,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<NewMessage, ApiError> {
    // curl -d sends form-urlencoded: its UTF-8 bodies are text, as a user of `curl -d 'hello'`
    // expects; only explicitly binary types (or bytes that are not UTF-8) travel as base64.
    let is_text = media_type(headers).is_none_or(|media| {
        media.starts_with("text/") || media == "application/x-www-form-urlencoded"
    });
    let binary = !(is_text && std::str::from_utf8(&body).is_ok());
    let tags = query
        .tags
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(NewMessage {
        key: query.key,
        value: body,
        binary,
        headers: message_headers(headers)?,
        tags,
    })
}

fn message_headers(headers: &HeaderMap) -> Result<Vec<(String, String)>, ApiError> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let suffix = name.as_str().strip_prefix(HEADER_PREFIX)?;
            Some((suffix, value))
        })
        .map(|(suffix, value)| {
            let text = value.to_str().map_err(|_| {
                ApiError::invalid(format!(
                    "header {HEADER_PREFIX}{suffix}: value is not visible ASCII"
                ))
            })?;
            if suffix.is_empty() {
                return Err(ApiError::invalid(format!(
                    "header {HEADER_PREFIX}: the header name is missing"
                )));
            }
            Ok((suffix.to_owned(), text.to_owned()))
        })
        .collect()
}

fn reply(ack: AckParam, outcome: ProduceOutcome) -> Response {
    let status = match ack {
        AckParam::None => StatusCode::ACCEPTED,
        AckParam::Leader | AckParam::All => StatusCode::OK,
    };
    let messages = outcome
        .messages
        .into_iter()
        .map(|produced| ProducedMessage {
            id: produced.id,
            partition: produced.partition,
            offset: produced.offset,
        })
        .collect();
    let durability = (
        HeaderName::from_static(DURABILITY_HEADER),
        HeaderValue::from_static(outcome.durability.as_str()),
    );
    (status, [durability], Json(ProduceResponse { messages })).into_response()
}
