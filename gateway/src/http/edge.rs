//! The edge: one middleware every request passes before its handler (a head over
//! `max_headers` or `max_header_bytes` is refused before it, as hyper hands the request over:
//! [`crate::http::head_size`], 431). In order it
//! 0. refuses requests that web pages make browsers send ([`crate::http::browser_guard`]: `Host`
//!    against DNS rebinding when anonymous, `Origin`; 403), on every route;
//! 1. looks the route up in the [`policy`] table;
//! 2. authenticates the bearer token into a [`Principal`] (401), unless the route is open;
//! 3. applies the principal's request rate (429), keyed by subject, or by client address for
//!    anonymous clients;
//! 4. checks the grant the table asks for on the topic of the path (403);
//! 5. charges the body to the memory budget before reading a byte of it (its
//!    `Content-Length`, or frame by frame when chunked: 503 `overloaded`, never a queue), then
//!    reads it (POST/PUT/PATCH/DELETE) whole, within `max_body_bytes` (413) and
//!    `body_read_timeout_ms` (408);
//! 6. checks the grant on a topic named in the body (403);
//! 7. takes a long-poll or stream slot (503 global, 429 per principal);
//! 8. runs the handler under the request timeout (408), returns the body's charge when the
//!    handler is done with it, charges the response body instead, and holds that charge and
//!    every permit until the response body has been handed to the socket
//!    ([`crate::limits::memory::ChargedBody`]).
//!
//! Per-topic produce rates are checked by [`admit_topic_rate`], which the produce handler
//! calls once it knows the batch's message and byte counts.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use broker_core::broker::NewMessage;
use broker_core::limits::MAX_WAIT_MS;
use http_body_util::BodyExt;

use crate::app::AppState;
use crate::auth::policy::{self, Load, Rule};
use crate::auth::{Action, Authenticator, Principal};
use crate::config::EdgeSettings;
use crate::http::browser_guard;
use crate::http::client_addr::client_address;
use crate::http::problem::ApiError;
use crate::limits::memory::{
    BodyCharge, ChargedBody, MemoryBudget, MemoryCharge, OVERLOADED_MEMORY,
    REQUEST_BYTES_HELD_PER_BODY_BYTE, UNCHARGED_BODY_BYTES,
};
use crate::limits::rate::{PrincipalRateLimits, RateLimited, TopicRateLimits};
use crate::limits::{CapExceeded, CapPermit, ConcurrencyCap, ConnectionSlots, LONG_POLL_MARGIN_MS};

/// What the edge shares across requests: keys, limits, budgets and limiters.
#[derive(Debug)]
pub struct Edge {
    /// Token verification.
    pub auth: Authenticator,
    /// The limits and switches.
    pub settings: EdgeSettings,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Requests per second per principal.
    pub principals: PrincipalRateLimits,
    /// Per-topic produce rates.
    pub topics: TopicRateLimits,
    /// Request bodies and answers held in memory.
    pub memory: MemoryBudget,
    /// Long-poll slots.
    pub long_polls: ConcurrencyCap,
    /// Open-connection slots, taken by the accept loop ([`crate::http::accept`]).
    pub connections: ConnectionSlots,
    /// SSE stream slots; a stream handler holds a [`crate::limits::StreamPermit`] from here
    /// (the edge takes it for `GET …/stream` routes).
    pub streams: ConcurrencyCap,
}

impl Edge {
    /// The edge of a server with these settings.
    pub fn new(auth: Authenticator, settings: EdgeSettings, max_body_bytes: usize) -> Self {
        Edge {
            principals: PrincipalRateLimits::new(
                settings.principal_requests_per_second,
                settings.rate_limit_burst_ms,
            ),
            topics: TopicRateLimits::new(settings.rate_limit_burst_ms),
            memory: MemoryBudget::new(settings.max_memory_bytes),
            connections: ConnectionSlots::new(settings.max_connections),
            long_polls: ConcurrencyCap::new(settings.max_long_polls.0, settings.max_long_polls.1),
            streams: ConcurrencyCap::new(settings.max_streams.0, settings.max_streams.1),
            auth,
            settings,
            max_body_bytes,
        }
    }

    /// An edge without keys and with default limits.
    pub fn anonymous(max_body_bytes: usize) -> Self {
        Edge::new(
            Authenticator::default(),
            EdgeSettings::default(),
            max_body_bytes,
        )
    }
}

/// Whatever a request holds: its body's memory until the handler is done, its slot until
/// the response body is sent.
#[derive(Debug, Default)]
struct Held {
    body: Option<BodyCharge>,
    slot: Option<CapPermit>,
}

/// The edge middleware (see the module docs).
pub async fn edge(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let mut body = RequestBody::Unread(body);
    match admit(&state, parts, &mut body).await {
        Ok((request, held, timeout)) => {
            let Held { body, slot } = held;
            let response = match timeout {
                Some(limit) => match tokio::time::timeout(limit, next.run(request)).await {
                    Ok(response) => response,
                    Err(_) => ApiError::RequestTimeout {
                        limit_ms: millis(limit),
                    }
                    .into_response(),
                },
                None => next.run(request).await,
            };
            drop(body);
            // A body of known size is held whole until sent; a stream (SSE) holds one event
            // at a time, bounded by its own in-flight cap.
            let charge = response
                .body()
                .size_hint()
                .exact()
                .and_then(|bytes| usize::try_from(bytes).ok())
                .map(|bytes| state.edge.memory.charge(bytes));
            response.map(|body| Body::new(ChargedBody::new(body, charge, slot)))
        }
        Err(error) => refuse(error, body, &state.edge).await,
    }
}

/// How far the edge got with a request's body when it refused it.
enum RequestBody {
    /// Not touched: a small one is drained so the connection stays usable.
    Unread(Body),
    /// Read to its end.
    Read,
    /// Cut off part way (over the size limit, or too slow).
    Cut,
}

impl RequestBody {
    /// Takes the unread body (empty if it was already taken), leaving `then` in its place.
    fn take(&mut self, then: RequestBody) -> Body {
        match std::mem::replace(self, then) {
            RequestBody::Unread(body) => body,
            RequestBody::Read | RequestBody::Cut => Body::empty(),
        }
    }
}

/// The refusal's response. A body not read yet (or not to its end) is read and dropped, frame
/// by frame, when it is within `max_body_bytes`: the client gets its 4xx/503 on a connection
/// it can reuse, and the server never closes a socket with unread bytes in it (which makes
/// the kernel reset the connection, and can destroy the refusal before the client reads
/// it). Otherwise the response says `connection: close`, so that a client does not send its
/// next request down a socket the server is about to close (a broken pipe mid-request
/// instead of a reply).
async fn refuse(error: ApiError, body: RequestBody, edge: &Edge) -> Response {
    let reusable = match body {
        RequestBody::Read => true,
        RequestBody::Cut => false,
        RequestBody::Unread(body) => {
            let max = edge.max_body_bytes as u64;
            let within = body.size_hint().upper().is_none_or(|bytes| bytes <= max);
            within && discard_body(body, max, edge.settings.body_read_timeout).await
        }
    };
    let mut response = error.into_response();
    if !reusable {
        response.headers_mut().insert(
            header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

async fn admit(
    state: &AppState,
    parts: axum::http::request::Parts,
    body: &mut RequestBody,
) -> Result<(Request, Held, Option<Duration>), ApiError> {
    let edge = &state.edge;
    browser_guard::admit(&parts.headers, &edge.settings, !edge.auth.enabled())?;
    let access = policy::classify(&parts.method, parts.uri.path());
    if access.rule == Rule::Docs && !edge.settings.expose_docs {
        return Err(ApiError::RouteNotFound {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
        });
    }
    let open = match access.rule {
        Rule::Public => true,
        Rule::Docs => edge.settings.docs_public,
        Rule::Metrics => edge.settings.metrics_public,
        _ => false,
    };
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
    let principal = if !edge.auth.enabled() {
        Principal::anonymous()
    } else if open {
        let unread = body.take(RequestBody::Read);
        return Ok((
            Request::from_parts(parts, unread),
            Held::default(),
            Some(edge.settings.request_timeout),
        ));
    } else {
        let authorization = parts.headers.get(header::AUTHORIZATION);
        edge.auth
            .authenticate(authorization.map(|value| value.as_bytes()))?
    };
    if access.rule != Rule::Public {
        edge.principals.admit(|| {
            if principal.anonymous {
                let client = client_address(peer, &parts.headers, &edge.settings.trusted_proxies);
                format!("ip:{client}")
            } else {
                format!("sub:{}", principal.subject)
            }
        })?;
    }
    let mut held = Held::default();
    authorize(&principal, &access, &[])?;
    let body = if has_body(&parts.method) {
        let declared = content_length(&parts.headers);
        if declared.is_some_and(|bytes| bytes > edge.max_body_bytes as u64) {
            return Err(ApiError::BodyTooLarge);
        }
        let declared = declared.map_or(0, |bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
        let mut charge = edge
            .memory
            .try_charge(body_charge(declared, &edge.memory))
            .ok_or(OVERLOADED_MEMORY)?;
        let mut unread = body.take(RequestBody::Cut);
        match read_body(&mut unread, edge, &mut charge, declared).await {
            Ok(bytes) => {
                *body = RequestBody::Read;
                held.body = Some(BodyCharge::new(charge));
                bytes
            }
            Err(error) => {
                if matches!(error, ApiError::Overloaded { .. }) {
                    // The rest of the body is still there to drain: the client gets its 503.
                    *body = RequestBody::Unread(unread);
                }
                return Err(error);
            }
        }
    } else {
        Bytes::new()
    };
    if matches!(access.rule, Rule::AdminOnBody(_) | Rule::TopicAndBody(..)) {
        authorize(&principal, &access, &body)?;
    }
    let mut timeout = Some(edge.settings.request_timeout);
    match access.load {
        Load::LongPoll {
            only_with_wait_query,
        } if !only_with_wait_query || waits(parts.uri.query()) => {
            held.slot = Some(take_slot(&edge.long_polls, &principal, "long-poll")?);
            timeout = Some(Duration::from_millis(MAX_WAIT_MS + LONG_POLL_MARGIN_MS));
        }
        Load::Stream => {
            held.slot = Some(take_slot(&edge.streams, &principal, "stream")?);
            timeout = None;
        }
        _ => {}
    }
    let mut request = Request::from_parts(parts, Body::from(body));
    request.extensions_mut().insert(principal);
    if let Some(charge) = &held.body {
        request.extensions_mut().insert(charge.clone());
    }
    Ok((request, held, timeout))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn has_body(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

/// Reads and drops a body, frame by frame (never holding more than one), for at most
/// `limit` and `max` bytes; whether it reached the end.
async fn discard_body(body: Body, max: u64, limit: Duration) -> bool {
    let mut body = body;
    let drain = async {
        let mut seen = 0u64;
        loop {
            match body.frame().await {
                Some(Ok(frame)) => {
                    seen += frame.data_ref().map_or(0, |data| data.len() as u64);
                    if seen > max {
                        return false;
                    }
                }
                Some(Err(_)) => return false,
                None => return true,
            }
        }
    };
    tokio::time::timeout(limit, drain).await.unwrap_or(false)
}

/// What a body of `bytes` is charged: nothing when it fits in its connection's own read
/// buffer (that memory is the connection's, bounded by `max_connections`, and a receive,
/// ack or admin call must not be refused because producers spent the budget), else
/// [`REQUEST_BYTES_HELD_PER_BODY_BYTE`] per byte, clamped to the whole budget so that a
/// body larger than it runs alone rather than never.
fn body_charge(bytes: usize, memory: &MemoryBudget) -> usize {
    if bytes <= UNCHARGED_BODY_BYTES {
        return 0;
    }
    bytes
        .saturating_mul(REQUEST_BYTES_HELD_PER_BODY_BYTE)
        .min(memory.capacity())
}

/// Reads the whole body within `max_body_bytes` and `body_read_timeout`, growing `charge` by
/// each frame's share where the body is longer than it declared (chunked bodies declare
/// nothing): a body that outgrows the memory budget is cut off with 503 `overloaded`.
async fn read_body(
    body: &mut Body,
    edge: &Edge,
    charge: &mut MemoryCharge,
    declared: usize,
) -> Result<Bytes, ApiError> {
    let limit = edge.settings.body_read_timeout;
    let max = edge.max_body_bytes;
    let read = async {
        let mut collected = bytes::BytesMut::with_capacity(declared.min(max));
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|_| ApiError::invalid("the request body could not be read"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if collected.len() + data.len() > max {
                return Err(ApiError::BodyTooLarge);
            }
            let needed = body_charge(collected.len() + data.len(), &edge.memory);
            if needed > charge.bytes() && !charge.try_grow(needed - charge.bytes()) {
                return Err(OVERLOADED_MEMORY);
            }
            if collected.is_empty() && body.is_end_stream() {
                return Ok(data);
            }
            collected.extend_from_slice(&data);
        }
        Ok(collected.freeze())
    };
    tokio::time::timeout(limit, read)
        .await
        .map_err(|_| ApiError::RequestTimeout {
            limit_ms: millis(limit),
        })?
}

/// Whether a `wait_ms` query parameter above 0 makes an offset read a long-poll.
fn waits(query: Option<&str>) -> bool {
    query.unwrap_or_default().split('&').any(|pair| {
        pair.split_once('=').is_some_and(|(name, value)| {
            name == "wait_ms" && value.parse::<u64>().map_or(true, |ms| ms > 0)
        })
    })
}

fn take_slot(
    cap: &ConcurrencyCap,
    principal: &Principal,
    what: &str,
) -> Result<CapPermit, ApiError> {
    cap.try_acquire(&principal.subject)
        .map_err(|exceeded| match exceeded {
            CapExceeded::Global => ApiError::Overloaded {
                resource: if what == "stream" {
                    "the stream slots"
                } else {
                    "the long-poll slots"
                },
            },
            CapExceeded::PerPrincipal => ApiError::RateLimited(RateLimited {
                detail: format!("this client already holds its share of concurrent {what}s"),
                limit: 0,
                retry_after_secs: 1,
            }),
        })
}

fn forbidden(action: Action, topic: &str) -> ApiError {
    ApiError::Forbidden {
        action,
        topic: topic.to_owned(),
    }
}

/// Checks the table's rule against the principal's grants.
fn authorize(
    principal: &Principal,
    access: &policy::RouteAccess,
    body: &[u8],
) -> Result<(), ApiError> {
    let topic = access.topic.as_deref().unwrap_or_default();
    let grants = &principal.grants;
    let body_topic = |field: &str| -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        value.get(field)?.as_str().map(str::to_owned)
    };
    match access.rule {
        Rule::Public | Rule::Docs | Rule::Metrics | Rule::Authenticated => Ok(()),
        Rule::Topic(action) if grants.allows(action, topic) => Ok(()),
        Rule::Topic(action) => Err(forbidden(action, topic)),
        Rule::ClusterAdmin if grants.allows_everywhere(Action::Admin) => Ok(()),
        Rule::ClusterAdmin => Err(forbidden(Action::Admin, "*")),
        Rule::AnyOnTopic if grants.allows_any(topic) => Ok(()),
        Rule::AnyOnTopic => Err(forbidden(Action::Consume, topic)),
        Rule::AdminOnBody(field) => match body_topic(field) {
            Some(named) if !grants.allows(Action::Admin, &named) => {
                Err(forbidden(Action::Admin, &named))
            }
            _ => Ok(()),
        },
        Rule::TopicAndBody(action, field) => {
            if !grants.allows(action, topic) {
                return Err(forbidden(action, topic));
            }
            match body_topic(field) {
                Some(named) if !grants.allows(Action::Admin, &named) => {
                    Err(forbidden(Action::Admin, &named))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Admits a produce of `messages` to `topic` under the topic's rate limit.
pub fn admit_topic_rate(
    state: &AppState,
    topic: &str,
    messages: &[NewMessage],
) -> Result<(), ApiError> {
    let info = state.broker.describe_topic(topic)?;
    let bytes = messages.iter().map(|message| message.value.len()).sum();
    state.edge.topics.admit(
        topic,
        info.config.uid,
        info.config.rate_limit,
        messages.len(),
        bytes,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_positive_wait_makes_an_offset_read_a_long_poll() {
        assert!(waits(Some("offset=1&wait_ms=100")));
        assert!(!waits(Some("offset=1&wait_ms=0")));
        assert!(!waits(Some("offset=1")));
        assert!(!waits(None));
    }
}
