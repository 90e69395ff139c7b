//! Every stable problem `code` the API returns. Codes are API: never reuse or rename one.

/// A stable, machine-readable problem code and the short human title that goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The snake_case code clients match on (the problem's `code` member).
    pub code: &'static str,
    /// A short summary that does not change between occurrences (the problem's `title`).
    pub title: &'static str,
}

impl Code {
    const fn new(code: &'static str, title: &'static str) -> Self {
        Code { code, title }
    }
}

/// The topic named in the path does not exist.
pub const TOPIC_NOT_FOUND: Code = Code::new("topic_not_found", "Topic not found");
/// A topic of that name already exists.
pub const TOPIC_EXISTS: Code = Code::new("topic_exists", "Topic already exists");
/// The subscription named in the path does not exist on the topic.
pub const SUBSCRIPTION_NOT_FOUND: Code =
    Code::new("subscription_not_found", "Subscription not found");
/// A subscription of that name already exists on the topic.
pub const SUBSCRIPTION_EXISTS: Code =
    Code::new("subscription_exists", "Subscription already exists");
/// No message of the id in the path exists, or it can no longer be acted on (a delayed
/// message that was already delivered cannot be cancelled).
pub const MESSAGE_NOT_FOUND: Code = Code::new("message_not_found", "Message not found");
/// The topic has no partition with the number in the path.
pub const PARTITION_NOT_FOUND: Code = Code::new("partition_not_found", "Partition not found");
/// The request is malformed or a value is out of range: bad JSON, wrong types, unknown
/// fields, bad names, bad path or query parameters.
pub const INVALID_REQUEST: Code = Code::new("invalid_request", "Invalid request");
/// A message value exceeds the topic's `max_message_bytes`, or the body exceeds the server's
/// `max_body_bytes`.
pub const MESSAGE_TOO_LARGE: Code = Code::new("message_too_large", "Message too large");
/// The request line and headers exceed the server's `max_header_bytes`, or the headers
/// number more than its `max_headers`.
pub const HEADERS_TOO_LARGE: Code = Code::new("headers_too_large", "Request headers too large");
/// The route accepts only JSON and the request's `Content-Type` is something else.
pub const UNSUPPORTED_MEDIA_TYPE: Code =
    Code::new("unsupported_media_type", "Unsupported media type");
/// An offset read asked for an offset past the end of the partition.
pub const OFFSET_OUT_OF_RANGE: Code = Code::new("offset_out_of_range", "Offset out of range");
/// A receipt is not valid for this subscription, or its lease has ended (per receipt, in the
/// `failed` list of ack, nack and extend replies).
pub const RECEIPT_INVALID: Code = Code::new("receipt_invalid", "Receipt invalid");
/// A bounded queue is full; retry after the `Retry-After` header's seconds.
pub const OVERLOADED: Code = Code::new("overloaded", "Overloaded");
/// No leader for the partition or the cluster metadata here (an election is in progress, or
/// forwarding could not reach it): retry after `Retry-After`.
pub const NOT_LEADER: Code = Code::new("not_leader", "Not leader");
/// A write was not committed by a majority in time: its outcome is unknown (it may still be
/// committed); retry with the same message ids after `Retry-After`.
pub const REPLICATION_TIMEOUT: Code = Code::new("replication_timeout", "Replication timeout");
/// A message id of the batch was produced before by a write whose outcome is not known yet (it
/// timed out, or a leadership change cut it short, and may still be committed): nothing of the
/// batch was stored; retry it unchanged after `Retry-After`, which then answers with the first
/// result (`duplicate: true`) or stores the message.
pub const OUTCOME_PENDING: Code = Code::new("outcome_pending", "Earlier attempt still pending");
/// The server is shutting down and takes no new work; retry against another node or later.
pub const SHUTTING_DOWN: Code = Code::new("shutting_down", "Shutting down");
/// The disk holding the data is full.
pub const STORAGE_FULL: Code = Code::new("storage_full", "Storage full");
/// No route matches the request path.
pub const ROUTE_NOT_FOUND: Code = Code::new("route_not_found", "Route not found");
/// The web console has no file of the name in the path (`GET /ui/{asset}`).
pub const ASSET_NOT_FOUND: Code = Code::new("asset_not_found", "Console file not found");
/// The path exists but does not accept the request's method.
pub const METHOD_NOT_ALLOWED: Code = Code::new("method_not_allowed", "Method not allowed");
/// No bearer token, or one that fails verification (signature, expiry, key, issuer,
/// audience); the reply carries `WWW-Authenticate: Bearer`.
pub const UNAUTHORIZED: Code = Code::new("unauthorized", "Unauthorized");
/// The token is valid but its `scope` grants lack the action on the topic.
pub const FORBIDDEN: Code = Code::new("forbidden", "Forbidden");
/// The server serves without authentication and the request's `Host` is not a loopback
/// name, an IP address or a name in `allowed_hosts` (a DNS-rebinding defence).
pub const HOST_NOT_ALLOWED: Code = Code::new("host_not_allowed", "Host not allowed");
/// A browser sent the request for a web page of another origin (its `Origin` is not the
/// server's own nor in `allowed_origins`, or `Sec-Fetch-Site` says cross-site without one).
pub const ORIGIN_NOT_ALLOWED: Code = Code::new("origin_not_allowed", "Origin not allowed");
/// A topic's or the client's rate limit is spent; retry after `Retry-After` seconds.
pub const RATE_LIMITED: Code = Code::new("rate_limited", "Rate limited");
/// The request (or its body) took longer than the server allows.
pub const REQUEST_TIMEOUT: Code = Code::new("request_timeout", "Request timeout");
/// The node named in the path or body is not a member of the cluster.
pub const NODE_NOT_FOUND: Code = Code::new("node_not_found", "Node not found");
/// A partition's leadership was asked to move to a node that holds no replica of it.
pub const NOT_A_REPLICA: Code = Code::new("not_a_replica", "Not a replica");
/// Draining or removing the node would leave the cluster without an active node (or the
/// controller group without a voter).
pub const LAST_NODE: Code = Code::new("last_node", "Last node");
/// Draining or removing the node would leave fewer active nodes than a topic's replication
/// factor.
pub const TOO_FEW_ACTIVE_NODES: Code = Code::new("too_few_active_nodes", "Too few active nodes");
/// The node cannot be removed while a partition's placement names it (replicas cannot move
/// yet while the replication factor equals the node count).
pub const NODE_HOLDS_REPLICAS: Code = Code::new("node_holds_replicas", "Node holds replicas");
/// A cluster administration route was called on a node that runs alone (without cluster
/// settings): there are no other nodes to move leaders or replicas to.
pub const NOT_CLUSTERED: Code = Code::new("not_clustered", "Not clustered");
/// The cluster metadata refuses the change for another reason given in `detail`.
pub const CLUSTER_CONFLICT: Code = Code::new("cluster_conflict", "Cluster conflict");
/// No alert rule of that name exists.
pub const ALERT_RULE_NOT_FOUND: Code = Code::new("alert_rule_not_found", "Alert rule not found");
/// An alert rule of that name exists (delete it first to change it).
pub const ALERT_RULE_EXISTS: Code = Code::new("alert_rule_exists", "Alert rule already exists");
/// The route is not available on a cluster node yet (no route answers it since alerts work
/// in a cluster; kept for routes that may come single-node first).
pub const NOT_SUPPORTED_IN_CLUSTER: Code =
    Code::new("not_supported_in_cluster", "Not supported in a cluster");
/// Message lookups by id or key are off on this server: it runs with `trace_index = false`.
pub const TRACE_DISABLED: Code = Code::new("trace_disabled", "Message trace disabled");
/// The per-minute history is off on this server: it runs with `history = false`.
pub const HISTORY_DISABLED: Code = Code::new("history_disabled", "History disabled");
/// A server-side failure; always a bug or a broken disk. Details are in the server log.
pub const INTERNAL_ERROR: Code = Code::new("internal_error", "Internal error");

/// Every code, for documentation and uniqueness tests.
pub const ALL: &[Code] = &[
    TOPIC_NOT_FOUND,
    MESSAGE_NOT_FOUND,
    TOPIC_EXISTS,
    SUBSCRIPTION_NOT_FOUND,
    SUBSCRIPTION_EXISTS,
    PARTITION_NOT_FOUND,
    INVALID_REQUEST,
    MESSAGE_TOO_LARGE,
    HEADERS_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    OFFSET_OUT_OF_RANGE,
    RECEIPT_INVALID,
    OVERLOADED,
    NOT_LEADER,
    REPLICATION_TIMEOUT,
    OUTCOME_PENDING,
    SHUTTING_DOWN,
    STORAGE_FULL,
    ROUTE_NOT_FOUND,
    ASSET_NOT_FOUND,
    METHOD_NOT_ALLOWED,
    INTERNAL_ERROR,
    UNAUTHORIZED,
    FORBIDDEN,
    HOST_NOT_ALLOWED,
    ORIGIN_NOT_ALLOWED,
    RATE_LIMITED,
    REQUEST_TIMEOUT,
    NODE_NOT_FOUND,
    NOT_A_REPLICA,
    LAST_NODE,
    TOO_FEW_ACTIVE_NODES,
    NODE_HOLDS_REPLICAS,
    CLUSTER_CONFLICT,
    NOT_CLUSTERED,
    ALERT_RULE_NOT_FOUND,
    ALERT_RULE_EXISTS,
    NOT_SUPPORTED_IN_CLUSTER,
    TRACE_DISABLED,
    HISTORY_DISABLED,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ALL {
            assert!(seen.insert(code.code), "duplicate code {}", code.code);
            assert!(
                code.code
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{} is not snake_case",
                code.code
            );
        }
    }
}
