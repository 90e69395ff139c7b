//! The edge: one middleware every request passes before its handler. In order it
//! 1. looks the route up in the [`policy`] table;
//! 2. authenticates the bearer token into a [`Principal`] (401), unless the route is open;
//! 3. applies the principal's request rate (429), keyed by subject, or by client address for
//!    anonymous clients;
//! 4. reads a body (POST/PUT/PATCH/DELETE) whole, within `max_body_bytes` (413) and
//!    `body_read_timeout_ms` (408), after charging a produce's bytes to the in-flight budget
//!    (503 `overloaded`, never a queue);
//! 5. checks the grant the table asks for on the topic of the path or body (403);
//! 6. takes a long-poll or stream slot (503 global, 429 per principal);
//! 7. runs the handler under the request timeout (408), and holds every permit until the
//!    response body has been sent.
//!
//! Per-topic produce rates are checked by [`admit_topic_rate`], which the produce handler
//! calls once it knows the batch's message and byte counts.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use broker_core::broker::NewMessage;
use broker_core::limits::MAX_WAIT_MS;
use http_body::{Frame, SizeHint};
use http_body_util::{BodyExt, Limited};

use crate::app::AppState;
use crate::auth::policy::{self, Load, Rule};
use crate::auth::{Action, Authenticator, Principal};
use crate::client_addr::client_address;
use crate::config::EdgeSettings;
use crate::limits::{
    ByteBudget, CapExceeded, CapPermit, ConcurrencyCap, ConnectionSlots, LONG_POLL_MARGIN_MS,
};
use crate::problem::ApiError;
use crate::rate_limit::{PrincipalRateLimits, RateLimited, TopicRateLimits};

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
    /// Produce bytes in flight.
    pub produce_bytes: ByteBudget,
    /// Long-poll slots.
    pub long_polls: ConcurrencyCap,
    /// Open-connection slots, taken by the accept loop ([`crate::accept`]).
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
            produce_bytes: ByteBudget::new(settings.max_inflight_produce_bytes),
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

/// Whatever a request holds until its response body is sent.
#[derive(Debug, Default)]
struct Held {
    _bytes: Option<crate::limits::BytePermit>,
    _slot: Option<CapPermit>,
}

/// The edge middleware (see the module docs).
pub async fn edge(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let mut body = RequestBody::Unread(body);
    match admit(&state, parts, &mut body).await {
        Ok((request, held, timeout)) => {
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
            response.map(|body| Body::new(HoldingBody { body, _held: held }))
        }
        Err(error) => refuse(error, body, state.edge.settings.body_read_timeout).await,
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

/// The refusal's response. The client's connection may be reused only when its body has
/// been read to the end; otherwise the response says `connection: close`, so that a client
/// does not send its next request down a socket the server is about to close (a broken pipe
/// mid-request instead of a reply).
async fn refuse(error: ApiError, body: RequestBody, limit: Duration) -> Response {
    let reusable = match body {
        RequestBody::Read => true,
        RequestBody::Cut => false,
        RequestBody::Unread(body) => {
            let small = body
                .size_hint()
                .upper()
                .is_some_and(|bytes| bytes <= REFUSAL_DRAIN_BYTES);
            small && discard_body(body, limit).await
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
        let key = if principal.anonymous {
            let client = client_address(peer, &parts.headers, &edge.settings.trusted_proxies);
            format!("ip:{client}")
        } else {
            format!("sub:{}", principal.subject)
        };
        edge.principals.admit(&key)?;
    }
    let mut held = Held::default();
    if access.load == Load::Produce {
        let bytes = content_length(&parts.headers).unwrap_or(edge.max_body_bytes as u64);
        if bytes > edge.max_body_bytes as u64 {
            return Err(ApiError::BodyTooLarge);
        }
        match edge
            .produce_bytes
            .try_reserve(usize::try_from(bytes).unwrap_or(usize::MAX))
        {
            Some(permit) => held._bytes = Some(permit),
            None => {
                return Err(ApiError::Overloaded {
                    resource: "the in-flight produce byte budget",
                });
            }
        }
    }
    authorize(&principal, &access, &[])?;
    let body = if has_body(&parts.method) {
        let bytes = read_body(body.take(RequestBody::Cut), edge).await?;
        *body = RequestBody::Read;
        bytes
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
            held._slot = Some(take_slot(&edge.long_polls, &principal, "long-poll")?);
            timeout = Some(Duration::from_millis(MAX_WAIT_MS + LONG_POLL_MARGIN_MS));
        }
        Load::Stream => {
            held._slot = Some(take_slot(&edge.streams, &principal, "stream")?);
            timeout = None;
        }
        _ => {}
    }
    let mut request = Request::from_parts(parts, Body::from(body));
    request.extensions_mut().insert(principal);
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

/// Largest declared body a refused request still reads (and drops, frame by frame, never
/// holding more than one frame): the client gets its 4xx/503 on a connection it can reuse.
/// Larger bodies, or bodies of unknown length, are cut off with the connection.
pub const REFUSAL_DRAIN_BYTES: u64 = 64 * 1024;

/// Reads and drops a body, frame by frame, for at most `limit`; whether it reached the end.
async fn discard_body(body: Body, limit: Duration) -> bool {
    let mut body = body;
    let drain = async {
        loop {
            match body.frame().await {
                Some(Ok(_)) => {}
                Some(Err(_)) => return false,
                None => return true,
            }
        }
    };
    tokio::time::timeout(limit, drain).await.unwrap_or(false)
}

/// Reads the whole body within `max_body_bytes` and `body_read_timeout`.
async fn read_body(body: Body, edge: &Edge) -> Result<Bytes, ApiError> {
    let limit = edge.settings.body_read_timeout;
    let collected = tokio::time::timeout(limit, Limited::new(body, edge.max_body_bytes).collect())
        .await
        .map_err(|_| ApiError::RequestTimeout {
            limit_ms: millis(limit),
        })?;
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(ApiError::BodyTooLarge),
        Err(_) => Err(ApiError::invalid("the request body could not be read")),
    }
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

/// A response body that keeps the request's permits until it is sent or dropped.
struct HoldingBody {
    body: Body,
    _held: Held,
}

impl HttpBody for HoldingBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
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
