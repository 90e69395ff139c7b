//! The gateway's one error type, [`ApiError`], and the ONE mapping from [`BrokerError`] to an
//! HTTP status and problem `code`. Every error leaves as RFC 9457 `application/problem+json`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use broker_core::BrokerError;
use broker_core::cluster::ClusterError;
use broker_core::limits::OutOfRange;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{Action, AuthError};
use crate::http::codes::{self, Code};
use crate::limits::OVERLOADED_RETRY_AFTER_SECS;
use crate::limits::rate::RateLimited;

/// The media type of every error body.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem details body.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the problem type: `urn:wharf:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the problem type; the same for every occurrence of a `code`.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request, in words.
    pub detail: String,
    /// The stable, machine-readable problem code (`topic_not_found`, `invalid_request`, …).
    pub code: String,
}

/// Everything a request can fail with, before or inside the broker.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The broker refused or failed the operation.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// The request could not be parsed or a gateway-checked value is invalid.
    #[error("{detail}")]
    InvalidRequest {
        /// What is wrong, naming the field or parameter.
        detail: String,
    },
    /// The body exceeds the server's `max_body_bytes`.
    #[error("the request body is larger than the server's max_body_bytes")]
    BodyTooLarge,
    /// The request head is over `max_header_bytes` or has more than `max_headers` headers.
    #[error("{detail}")]
    HeadersTooLarge {
        /// Which limit, and by how much.
        detail: String,
    },
    /// The route takes JSON only.
    #[error("this route accepts only Content-Type application/json (or a +json type)")]
    UnsupportedMediaType,
    /// No route matches the path.
    #[error("no route for {method} {path}")]
    RouteNotFound {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
    },
    /// The web console has no file of this name.
    #[error("the console has no file {name:?}")]
    AssetNotFound {
        /// The name asked for.
        name: String,
    },
    /// The path exists but not with this method.
    #[error("{method} is not allowed on {path}")]
    MethodNotAllowed {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
    },
    /// The server is draining before shutdown.
    #[error("the server is shutting down")]
    Draining,
    /// No valid bearer token.
    #[error("{0}")]
    Unauthorized(#[from] AuthError),
    /// The principal's grants lack `action` on `topic`.
    #[error("the token's scope does not grant {action} on topic '{topic}'")]
    Forbidden {
        /// The action needed.
        action: Action,
        /// The topic it is needed on.
        topic: String,
    },
    /// An anonymous server was addressed by a `Host` it does not answer to.
    #[error(
        "this server serves without authentication and answers only to a loopback name, an IP \
         address or a name in allowed_hosts, not to Host {host:?} (a defence against DNS \
         rebinding)"
    )]
    HostNotAllowed {
        /// The `Host` header.
        host: String,
    },
    /// A browser sent the request for a page of another origin.
    #[error(
        "requests from web pages of origin {origin:?} are refused: it is neither this server's \
         own origin nor in allowed_origins"
    )]
    OriginNotAllowed {
        /// The `Origin` header, or what stood for it.
        origin: String,
    },
    /// A rate limit is spent.
    #[error(transparent)]
    RateLimited(#[from] RateLimited),
    /// A gateway budget (in-flight bytes, long-poll or stream slots, connections) is spent.
    #[error("the server is overloaded: {resource} is spent; retry shortly")]
    Overloaded {
        /// Which budget.
        resource: &'static str,
    },
    /// A cluster administration route on a node that runs alone.
    #[error("this node is not part of a cluster (it runs without cluster settings)")]
    NotClustered,
    /// No alert rule of that name.
    #[error("no alert rule named '{name}'")]
    AlertRuleNotFound {
        /// The name asked for.
        name: String,
    },
    /// An alert rule of that name exists.
    #[error("an alert rule named '{name}' exists; delete it first to change it")]
    AlertRuleExists {
        /// The name given.
        name: String,
    },
    /// A route this node cannot serve in a cluster yet.
    #[error("{what} is not supported on a cluster node yet")]
    NotSupportedInCluster {
        /// What was asked for.
        what: &'static str,
    },
    /// A message lookup on a server that keeps no trace.
    #[error(
        "message lookups are off on this server: it runs with trace_index = false \
         (--trace-index, WHARF_TRACE_INDEX)"
    )]
    TraceDisabled,
    /// A history route on a server that keeps no history.
    #[error(
        "the per-minute history is off on this server: it runs with history = false \
         (--history, WHARF_HISTORY)"
    )]
    HistoryDisabled,
    /// The request or its body took longer than `limit_ms`.
    #[error("the request took longer than the server's {limit_ms} ms limit")]
    RequestTimeout {
        /// The limit that was hit.
        limit_ms: u64,
    },
    /// A gateway-side failure that is a bug (an extractor misused, a response that failed to
    /// encode).
    #[error("internal error: {detail}")]
    Internal {
        /// What failed, for the log only.
        detail: String,
    },
}

impl From<OutOfRange> for ApiError {
    /// A parameter the gateway checks itself, worded as its other refusals: `field: reason`.
    fn from(error: OutOfRange) -> Self {
        ApiError::invalid(format!("{}: {error}", error.field))
    }
}

impl ApiError {
    /// Shorthand for [`ApiError::InvalidRequest`].
    pub fn invalid(detail: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            detail: detail.into(),
        }
    }

    /// The status and stable code of this error: the one place broker errors are mapped.
    pub fn status_and_code(&self) -> (StatusCode, Code) {
        match self {
            ApiError::Broker(error) => broker_status_and_code(error),
            ApiError::InvalidRequest { .. } => (StatusCode::BAD_REQUEST, codes::INVALID_REQUEST),
            ApiError::BodyTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, codes::MESSAGE_TOO_LARGE),
            ApiError::HeadersTooLarge { .. } => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                codes::HEADERS_TOO_LARGE,
            ),
            ApiError::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                codes::UNSUPPORTED_MEDIA_TYPE,
            ),
            ApiError::RouteNotFound { .. } => (StatusCode::NOT_FOUND, codes::ROUTE_NOT_FOUND),
            ApiError::AssetNotFound { .. } => (StatusCode::NOT_FOUND, codes::ASSET_NOT_FOUND),
            ApiError::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, codes::METHOD_NOT_ALLOWED)
            }
            ApiError::Draining => (StatusCode::SERVICE_UNAVAILABLE, codes::SHUTTING_DOWN),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, codes::UNAUTHORIZED),
            ApiError::Forbidden { .. } => (StatusCode::FORBIDDEN, codes::FORBIDDEN),
            ApiError::HostNotAllowed { .. } => (StatusCode::FORBIDDEN, codes::HOST_NOT_ALLOWED),
            ApiError::OriginNotAllowed { .. } => (StatusCode::FORBIDDEN, codes::ORIGIN_NOT_ALLOWED),
            ApiError::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, codes::RATE_LIMITED),
            ApiError::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, codes::OVERLOADED),
            ApiError::RequestTimeout { .. } => {
                (StatusCode::REQUEST_TIMEOUT, codes::REQUEST_TIMEOUT)
            }
            ApiError::NotClustered => (StatusCode::CONFLICT, codes::NOT_CLUSTERED),
            ApiError::AlertRuleNotFound { .. } => {
                (StatusCode::NOT_FOUND, codes::ALERT_RULE_NOT_FOUND)
            }
            ApiError::AlertRuleExists { .. } => (StatusCode::CONFLICT, codes::ALERT_RULE_EXISTS),
            ApiError::NotSupportedInCluster { .. } => {
                (StatusCode::NOT_IMPLEMENTED, codes::NOT_SUPPORTED_IN_CLUSTER)
            }
            ApiError::TraceDisabled => (StatusCode::NOT_IMPLEMENTED, codes::TRACE_DISABLED),
            ApiError::HistoryDisabled => (StatusCode::NOT_IMPLEMENTED, codes::HISTORY_DISABLED),
            ApiError::Internal { .. } => (StatusCode::INTERNAL_SERVER_ERROR, codes::INTERNAL_ERROR),
        }
    }

    /// Seconds a client should wait before retrying, for 503 replies.
    fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::Broker(BrokerError::Overloaded { retry_after_ms, .. }) => {
                Some(retry_after_ms.div_ceil(1000).max(1))
            }
            ApiError::Broker(
                BrokerError::ShuttingDown
                | BrokerError::NotLeader { .. }
                | BrokerError::ReplicationTimeout { .. }
                | BrokerError::OutcomePending { .. }
                | BrokerError::LeaderNotMoved { .. },
            )
            | ApiError::Draining => Some(1),
            ApiError::Overloaded { .. } => Some(OVERLOADED_RETRY_AFTER_SECS),
            ApiError::RateLimited(limited) => Some(limited.retry_after_secs),
            _ => None,
        }
    }

    /// The `detail` shown to the client: never a file path or an internal message for 5xx.
    fn public_detail(&self, status: StatusCode) -> String {
        match self {
            ApiError::Broker(BrokerError::StorageFull { .. }) => {
                "the disk holding the data is full".to_owned()
            }
            _ if status == StatusCode::INTERNAL_SERVER_ERROR => {
                "the server failed to handle the request; the details are in its log".to_owned()
            }
            other => other.to_string(),
        }
    }

    /// The problem body for this error.
    pub fn problem(&self) -> Problem {
        let (status, code) = self.status_and_code();
        Problem {
            kind: format!("urn:wharf:problem:{}", code.code),
            title: code.title.to_owned(),
            status: status.as_u16(),
            detail: self.public_detail(status),
            code: code.code.to_owned(),
        }
    }
}

/// Maps a broker error to its HTTP status and stable code.
fn broker_status_and_code(error: &BrokerError) -> (StatusCode, Code) {
    match error {
        BrokerError::TopicNotFound { .. } => (StatusCode::NOT_FOUND, codes::TOPIC_NOT_FOUND),
        BrokerError::TopicExists { .. } => (StatusCode::CONFLICT, codes::TOPIC_EXISTS),
        BrokerError::SubscriptionNotFound { .. } => {
            (StatusCode::NOT_FOUND, codes::SUBSCRIPTION_NOT_FOUND)
        }
        BrokerError::SubscriptionExists { .. } => {
            (StatusCode::CONFLICT, codes::SUBSCRIPTION_EXISTS)
        }
        BrokerError::MessageNotFound { .. } => (StatusCode::NOT_FOUND, codes::MESSAGE_NOT_FOUND),
        BrokerError::PartitionNotFound { .. } => {
            (StatusCode::NOT_FOUND, codes::PARTITION_NOT_FOUND)
        }
        BrokerError::InvalidArgument { .. } => (StatusCode::BAD_REQUEST, codes::INVALID_REQUEST),
        BrokerError::MessageTooLarge { .. } => {
            (StatusCode::PAYLOAD_TOO_LARGE, codes::MESSAGE_TOO_LARGE)
        }
        BrokerError::OffsetOutOfRange { .. } => {
            (StatusCode::BAD_REQUEST, codes::OFFSET_OUT_OF_RANGE)
        }
        BrokerError::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, codes::OVERLOADED),
        BrokerError::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, codes::SHUTTING_DOWN),
        BrokerError::NotLeader { .. } => (StatusCode::SERVICE_UNAVAILABLE, codes::NOT_LEADER),
        BrokerError::ReplicationTimeout { .. } => {
            (StatusCode::SERVICE_UNAVAILABLE, codes::REPLICATION_TIMEOUT)
        }
        BrokerError::OutcomePending { .. } => {
            (StatusCode::SERVICE_UNAVAILABLE, codes::OUTCOME_PENDING)
        }
        BrokerError::StorageFull { .. } => (StatusCode::INSUFFICIENT_STORAGE, codes::STORAGE_FULL),
        BrokerError::Cluster { refusal, .. } => cluster_status_and_code(refusal),
        BrokerError::NotAReplica { .. } => (StatusCode::CONFLICT, codes::NOT_A_REPLICA),
        BrokerError::LeaderNotMoved { .. } => {
            (StatusCode::SERVICE_UNAVAILABLE, codes::REPLICATION_TIMEOUT)
        }
        BrokerError::Io { .. }
        | BrokerError::Metadata(_)
        | BrokerError::Corrupt { .. }
        | BrokerError::Panicked { .. } => {
            (StatusCode::INTERNAL_SERVER_ERROR, codes::INTERNAL_ERROR)
        }
    }
}

/// Maps the cluster metadata's refusal of a command to its HTTP status and stable code.
fn cluster_status_and_code(refusal: &ClusterError) -> (StatusCode, Code) {
    match refusal {
        ClusterError::UnknownNode { .. } => (StatusCode::NOT_FOUND, codes::NODE_NOT_FOUND),
        ClusterError::LastNode { .. } => (StatusCode::CONFLICT, codes::LAST_NODE),
        ClusterError::TooFewActiveNodes { .. } => {
            (StatusCode::CONFLICT, codes::TOO_FEW_ACTIVE_NODES)
        }
        ClusterError::NodeStillHoldsReplicas { .. } => {
            (StatusCode::CONFLICT, codes::NODE_HOLDS_REPLICAS)
        }
        ClusterError::TopicNotFound { .. } => (StatusCode::NOT_FOUND, codes::TOPIC_NOT_FOUND),
        ClusterError::PartitionNotFound { .. } => {
            (StatusCode::NOT_FOUND, codes::PARTITION_NOT_FOUND)
        }
        ClusterError::TopicExists { .. } => (StatusCode::CONFLICT, codes::TOPIC_EXISTS),
        ClusterError::SubscriptionNotFound { .. } => {
            (StatusCode::NOT_FOUND, codes::SUBSCRIPTION_NOT_FOUND)
        }
        ClusterError::SubscriptionExists { .. } => {
            (StatusCode::CONFLICT, codes::SUBSCRIPTION_EXISTS)
        }
        ClusterError::PartitionCount { .. }
        | ClusterError::ReplicationFactorZero
        | ClusterError::ReplicationFactorTooHigh { .. } => {
            (StatusCode::BAD_REQUEST, codes::INVALID_REQUEST)
        }
        ClusterError::AddressInUse { .. }
        | ClusterError::PlacementCount { .. }
        | ClusterError::BadPlacement { .. }
        | ClusterError::ImmutableTopicField { .. }
        | ClusterError::ImmutableSubscriptionField { .. }
        | ClusterError::KeyMismatch { .. }
        | ClusterError::StaleLeaderReport { .. }
        | ClusterError::EmptySubscriptionMap { .. } => {
            (StatusCode::CONFLICT, codes::CLUSTER_CONFLICT)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = self.problem();
        match problem.status {
            503 => tracing::debug!(error = %self, code = problem.code, "request shed"),
            501 => tracing::debug!(error = %self, code = problem.code, "route turned off"),
            500.. => tracing::error!(error = %self, code = problem.code, "request failed"),
            _ => {}
        }
        let status =
            StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(secs) = self.retry_after_secs() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        match &self {
            ApiError::Unauthorized(error) => {
                let challenge = if *error == AuthError::Missing {
                    "Bearer realm=\"wharf\""
                } else {
                    "Bearer realm=\"wharf\", error=\"invalid_token\""
                };
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            ApiError::RateLimited(limited) => {
                headers.insert("ratelimit-limit", HeaderValue::from(limited.limit));
                headers.insert("ratelimit-remaining", HeaderValue::from(0));
                headers.insert(
                    "ratelimit-reset",
                    HeaderValue::from(limited.retry_after_secs),
                );
                if let Ok(policy) = HeaderValue::from_str(&format!("{};w=1", limited.limit)) {
                    headers.insert("ratelimit-policy", policy);
                }
            }
            _ => {}
        }
        if let ApiError::Broker(BrokerError::NotLeader { leader, .. }) = &self {
            response
                .extensions_mut()
                .insert(crate::fanout::forward::LeaderHint(*leader));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(error: BrokerError) -> u16 {
        ApiError::from(error).problem().status
    }

    #[test]
    fn overloaded_rounds_retry_after_up_to_whole_seconds() {
        let error = ApiError::from(BrokerError::Overloaded {
            resource: "writer queue",
            retry_after_ms: 1_001,
        });
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn internal_failures_hide_paths_from_the_client() {
        let error = ApiError::from(BrokerError::Corrupt {
            path: "/secret/data/0.log".into(),
            position: 7,
            reason: "crc".into(),
        });
        let problem = error.problem();
        assert_eq!(problem.status, 500);
        assert!(!problem.detail.contains("/secret"), "{}", problem.detail);
        let full = ApiError::from(BrokerError::StorageFull {
            path: "/secret/x".into(),
        });
        assert_eq!(full.problem().status, 507);
        assert!(!full.problem().detail.contains("/secret"));
    }

    #[test]
    fn a_panicked_broker_task_is_a_500_internal_error_that_does_not_ask_for_a_retry() {
        let error = ApiError::from(BrokerError::Panicked {
            task: "the writer of /secret/data/0".into(),
        });
        let problem = error.problem();
        assert_eq!(problem.status, 500);
        assert_eq!(problem.code, codes::INTERNAL_ERROR.code);
        assert!(!problem.detail.contains("/secret"), "{}", problem.detail);
        let response = error.into_response();
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn bad_input_never_maps_to_a_server_error() {
        assert_eq!(status_of(BrokerError::invalid("name", "bad")), 400);
        assert_eq!(
            status_of(BrokerError::MessageTooLarge { size: 2, limit: 1 }),
            413
        );
        assert_eq!(
            status_of(BrokerError::OffsetOutOfRange {
                partition: 0,
                offset: 9,
                end_offset: 1
            }),
            400
        );
    }
}
