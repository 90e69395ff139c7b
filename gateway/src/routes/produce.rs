//! Producing: a JSON batch, or one raw message whose metadata travels in the query string and
//! `X-Wharf-Header-*` headers.

use axum::Json;
use axum::extract::{Extension, OriginalUri, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use broker_core::TraceContext;
use broker_core::broker::{Delay, NewMessage, ProduceOutcome};
use bytes::Bytes;

use crate::api::TopicPath;
use crate::api::produce::{
    AckParam, DURABILITY_HEADER, HEADER_PREFIX, IDEMPOTENCY_KEY_HEADER, ProduceQuery,
    ProduceRequest, ProduceResponse, ProducedMessage, RawMessage, TRACEPARENT_HEADER,
    TRACESTATE_HEADER,
};
use crate::app::AppState;
use crate::fanout::gather::leaders_to_gather;
use crate::fanout::scatter::Scatter;
use crate::http::extract::{
    PathParams, QueryParams, RawBody, is_json_content_type, media_type, parse_json_borrowed,
};
use crate::http::problem::{ApiError, Problem};
use crate::http::produce_origin::ProducedBy;
use crate::json::integral_floats;
use crate::json::payload::decode_values;
use crate::limits::memory::{BodyCharge, OVERLOADED_MEMORY, PRODUCE_BYTES_PER_MESSAGE};

/// Produce messages.
///
/// With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
/// 1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
/// when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
/// absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`, `?delay_ms=`,
/// `?deliver_at_ms=`, the `Idempotency-Key` header (the message id) and
/// `X-Wharf-Header-<name>` request headers carry the rest. The reply
/// header `Wharf-Durability` says what the ack proves: `none` (queued, `ack=none`),
/// `leader-written` or `leader-fsynced` (on the leader, in its page cache or fsynced),
/// `replicated` or `replicated-fsynced` (committed by a majority of the partition's
/// replicas in a cluster, written per their fsync policy or fsynced).
///
/// Idempotency: a message with a client `id` (JSON) or `Idempotency-Key` (raw) that was
/// produced before within the topic's `dedup_window_ms` (default 10 minutes, kept across
/// restarts) is not stored again; its reply entry repeats the first result (same partition
/// and offset) with `"duplicate": true`. In a cluster this holds across leader changes,
/// heals and retries at any node: an unkeyed message with an `id` goes to the partition its
/// id hashes to (a keyed one to its key's), so every attempt meets that partition's leader;
/// a retry whose earlier attempt's outcome is not known yet (it timed out, or a leadership
/// change cut it short) is refused whole with 503 `outcome_pending`, storing nothing, until
/// it is known: retry it unchanged after `Retry-After`.
///
/// In a cluster, a JSON batch whose messages fall in partitions led by different nodes is
/// split by leader and answered as one reply in request order, with the weakest
/// `Wharf-Durability` of its parts; a part that fails makes the answer that part's error,
/// and the other parts may have been stored (retry with the same message `id`s: the
/// repeats are answered as duplicates, not stored again).
///
/// Trace context: a message may carry a W3C `traceparent` (and `tracestate`): per message
/// in a JSON batch, as the request headers of those names on a raw produce (a JSON batch's
/// headers are the request's own context and are not copied into its messages). They are
/// stored with the message and handed back on every delivery (receive, stream, offset read,
/// dead letter, redrive); a malformed one refuses the whole request with 400.
///
/// Delays: `delay_ms` or `deliver_at_ms` (at most one of them), up to one year ahead. A
/// delayed message gets `deliver_at_ms` and no offset in the reply, is invisible to every
/// subscription until due, and can be cancelled until then with
/// `DELETE /v1/topics/{topic}/messages/{id}`.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/messages \
///   -d '{"messages":[{"value":"hello","key":"c-1","tags":["eu"],"id":"order-42","delay_ms":60000}]}'
/// curl -H 'Idempotency-Key: order-43' 'localhost:8080/v1/topics/orders/messages?delay_ms=5000&tags=eu' -d 'hello'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/messages", tag = "messages",
    params(TopicPath, ProduceQuery,
        ("Idempotency-Key" = Option<String>, Header,
            description = "Raw bodies only: the message's client-chosen id (see `id` in a JSON batch)",
            min_length = 1, max_length = 200, pattern = r"^[!-.0-~]+$"),
        ("traceparent" = Option<String>, Header,
            description = "Raw bodies only: the W3C Trace Context `traceparent` stored with the message (see `traceparent` in a JSON batch)",
            max_length = 255, pattern = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[!-~]*)?$"),
        ("tracestate" = Option<String>, Header,
            description = "Raw bodies only: the W3C Trace Context `tracestate`, with a `traceparent`",
            max_length = 512)),
    request_body(description = "A JSON batch; or, with any other Content-Type, the raw body \
        as one message (text for `text/*`, binary for `application/octet-stream`)",
        content((ProduceRequest = "application/json"), (RawMessage = "application/octet-stream"))),
    responses(
        (status = 200, description = "Stored as `ack` asked", body = ProduceResponse,
            headers(("Wharf-Durability" = String, description = "What the ack proves: `leader-written`, `leader-fsynced`, `replicated` or `replicated-fsynced`"))),
        (status = 202, description = "Accepted (`ack=none`): queued, not yet written",
            body = ProduceResponse,
            headers(("Wharf-Durability" = String, description = "`none`"))),
        (status = 400, description = "Malformed batch, bad value fields, bad query, a bad `id`, tag, delay or trace context, or both delay fields (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "A value over the topic's `max_message_bytes`, or the body over `max_body_bytes` (`message_too_large`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Back-pressure (`overloaded`); in a cluster also no leader (`not_leader`), a write not committed in time (`replication_timeout`: its outcome is unknown, retry with the same ids), or an earlier attempt of one of the batch's ids whose outcome is not known yet (`outcome_pending`: nothing was stored); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full (`storage_full`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
#[allow(
    clippy::too_many_arguments,
    reason = "an axum handler takes one extractor per part of the request it reads"
)]
pub async fn produce(
    State(state): State<AppState>,
    PathParams(path): PathParams<TopicPath>,
    QueryParams(query): QueryParams<ProduceQuery>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    charge: Option<Extension<BodyCharge>>,
    ProducedBy(origin): ProducedBy,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    produce_body(&state, path, query, &uri, &headers, charge, origin, body).await
}

/// [`produce`], its parts extracted.
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of the request `produce` extracted, handed on as they are"
)]
async fn produce_body(
    state: &AppState,
    path: TopicPath,
    query: ProduceQuery,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    charge: Option<Extension<BodyCharge>>,
    origin: std::sync::Arc<broker_core::Origin>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let ack = query.ack.unwrap_or_default();
    let messages = if is_json_content_type(headers) {
        let (messages, held) = json_messages(&query, headers, &body)?;
        if let Some(leaders) = leaders_to_gather(state, headers, &path.topic)? {
            crate::http::edge::admit_topic_rate(state, &path.topic, &messages)?;
            let scatter = Scatter {
                state,
                topic: &path.topic,
                query: uri.query(),
                headers,
                ack: ack.into(),
                leaders,
                origin,
            };
            let room = |shares: usize| {
                charge
                    .as_ref()
                    .is_none_or(|Extension(charge)| charge.fit(held.saturating_add(shares)))
            };
            return scatter.produce(&body, messages, room).await;
        }
        // Base64 values live in their own buffer now, so the body can go before the write;
        // text values are slices of it and keep it alive (`held` counts it then).
        drop(body);
        if let Some(Extension(charge)) = &charge
            && !charge.fit(held)
        {
            return Err(OVERLOADED_MEMORY);
        }
        messages
    } else {
        vec![raw_message(query, headers, body)?]
    };
    crate::http::edge::admit_topic_rate(state, &path.topic, &messages)?;
    let outcome = state
        .broker
        .produce_from(&path.topic, messages, ack.into(), Some(origin))
        .await?;
    Ok(reply(ack, outcome))
}

/// The messages of a JSON batch, parsed borrowing from `body` with the values decoded into
/// one buffer, and the bytes they hold: their values (and the body, when text values are
/// slices of it) plus [`PRODUCE_BYTES_PER_MESSAGE`] each.
pub fn json_messages(
    query: &ProduceQuery,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Vec<NewMessage>, usize), ApiError> {
    if query.key.is_some()
        || query.tags.is_some()
        || query.delay_ms.is_some()
        || query.deliver_at_ms.is_some()
    {
        return Err(ApiError::invalid(
            "the key, tags, delay_ms and deliver_at_ms query parameters apply to raw bodies only; put them in the JSON messages",
        ));
    }
    if headers.contains_key(IDEMPOTENCY_KEY_HEADER) {
        return Err(ApiError::invalid(
            "the Idempotency-Key header applies to raw bodies only; give each JSON message an id",
        ));
    }
    // The good path parses once; only a refused body is tried again with its integral floats
    // as integers (`"delay_ms": 5.0`), which JSON Schema counts as integers.
    let rewritten;
    let (request, body): (ProduceRequest, &Bytes) = match parse_json_borrowed(body) {
        Ok(request) => (request, body),
        Err(refusal) => match integral_floats::rewrite(body) {
            Some(bytes) => {
                rewritten = Bytes::from(bytes);
                let request = parse_json_borrowed(&rewritten).map_err(|_| refusal)?;
                (request, &rewritten)
            }
            None => return Err(refusal),
        },
    };
    let values: Vec<_> = request
        .messages
        .iter()
        .map(|message| (message.value.as_deref(), message.value_base64.as_deref()))
        .collect();
    let decoded = decode_values(body, &values)?;
    let held = decoded
        .held_bytes
        .saturating_add(values.len().saturating_mul(PRODUCE_BYTES_PER_MESSAGE));
    let messages = request
        .messages
        .into_iter()
        .zip(decoded.values)
        .enumerate()
        .map(|(index, (message, (value, binary)))| {
            let delay = delay(message.delay_ms, message.deliver_at_ms)
                .map_err(|error| ApiError::invalid(format!("messages[{index}]: {error}")))?;
            let trace = TraceContext::from_fields(
                message.traceparent.as_deref(),
                message.tracestate.as_deref(),
            )
            .map_err(|error| ApiError::invalid(format!("messages[{index}]: {error}")))?;
            Ok(NewMessage {
                key: message.key,
                value,
                binary,
                headers: message.headers.unwrap_or_default().into_iter().collect(),
                tags: message.tags.unwrap_or_default(),
                id: message.id,
                delay,
                trace,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok((messages, held))
}

/// The delay of a message from its two optional fields, at most one of which may be set.
fn delay(delay_ms: Option<u64>, deliver_at_ms: Option<u64>) -> Result<Option<Delay>, &'static str> {
    match (delay_ms, deliver_at_ms) {
        (Some(_), Some(_)) => Err("give at most one of delay_ms and deliver_at_ms"),
        (Some(ms), None) => Ok(Some(Delay::AfterMs(ms))),
        (None, Some(at)) => Ok(Some(Delay::AtMs(at))),
        (None, None) => Ok(None),
    }
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
    let delay = delay(query.delay_ms, query.deliver_at_ms).map_err(ApiError::invalid)?;
    Ok(NewMessage {
        key: query.key,
        value: body,
        binary,
        headers: message_headers(headers)?,
        tags,
        id: idempotency_key(headers)?,
        delay,
        trace: trace_headers(headers)?,
    })
}

/// The W3C `traceparent` and `tracestate` request headers of a raw produce, if any (several
/// `tracestate` lines join with commas, as HTTP list headers do).
fn trace_headers(headers: &HeaderMap) -> Result<Option<TraceContext>, ApiError> {
    fn text<'a>(value: &'a HeaderValue, name: &str) -> Result<&'a str, ApiError> {
        value
            .to_str()
            .map_err(|_| ApiError::invalid(format!("header {name}: value is not visible ASCII")))
    }
    let mut parents = headers.get_all(TRACEPARENT_HEADER).iter();
    let parent = parents
        .next()
        .map(|value| text(value, TRACEPARENT_HEADER))
        .transpose()?;
    if parents.next().is_some() {
        return Err(ApiError::invalid(
            "header traceparent: given more than once",
        ));
    }
    let states = headers
        .get_all(TRACESTATE_HEADER)
        .iter()
        .map(|value| text(value, TRACESTATE_HEADER))
        .collect::<Result<Vec<_>, _>>()?;
    let state = (!states.is_empty()).then(|| states.join(","));
    TraceContext::from_fields(parent, state.as_deref())
        .map_err(|error| ApiError::invalid(format!("trace context headers: {error}")))
}

/// The `Idempotency-Key` request header, if any: the raw message's id.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    headers
        .get(IDEMPOTENCY_KEY_HEADER)
        .map(|value| {
            value.to_str().map(str::to_owned).map_err(|_| {
                ApiError::invalid("header Idempotency-Key: value is not visible ASCII")
            })
        })
        .transpose()
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
            deliver_at_ms: produced.deliver_at_ms,
            duplicate: produced.duplicate,
        })
        .collect();
    let durability = (
        HeaderName::from_static(DURABILITY_HEADER),
        HeaderValue::from_static(outcome.durability.as_str()),
    );
    (status, [durability], Json(ProduceResponse { messages })).into_response()
}
