//! The route → access table: for every route, which grant it needs on which topic, and what
//! kind of load it is (a produce, a long-poll, a stream). It is the ONE place authorization
//! is decided; handlers never check grants. A new route is one line in [`ROUTES`]; a route
//! missing from the table still needs a valid token ([`Rule::Authenticated`]), never less.
//!
//! | route | needs |
//! |---|---|
//! | `GET /healthz`, `GET /readyz` | nothing, ever |
//! | `GET /ui`, `GET /ui/{asset}` (the console's page and files; its API calls carry the token) | nothing, ever |
//! | `GET /docs`, `GET /openapi.json` | a valid token, unless `docs_public` |
//! | `GET /metrics` | a valid token, unless `metrics_public` |
//! | `POST /v1/topics` | `admin` on the body's `name` |
//! | `GET /v1/topics` | a valid token; lists only topics the principal has some grant on |
//! | `GET /v1/topics/{t}`, `GET …/subscriptions`, `GET …/subscriptions/{s}` | any grant on `t` |
//! | `PATCH`/`DELETE /v1/topics/{t}`, `DELETE …/subscriptions/{s}`, `POST …/{s}/redrive` | `admin` on `t` |
//! | `POST …/subscriptions`, `PATCH …/subscriptions/{s}` | `admin` on `t`, and on the body's `dead_letter_topic` if any |
//! | `POST /v1/topics/{t}/messages`, `DELETE …/messages/{id}` | `produce` on `t` |
//! | `GET …/messages`, `GET …/messages/{id}`, `GET …/partitions/{p}/messages` | `consume` on `t` |
//! | `POST …/{s}/receive`, `ack`, `nack`, `extend`, `seek`; `GET …/{s}/stream` | `consume` on `t` |
//! | `POST /v1/cluster/partitions/{t}/{p}/leader`, `POST /v1/cluster/rebalance`, `POST /v1/cluster/nodes/{id}/drain`, `DELETE /v1/cluster/nodes/{id}` | `admin:*` (admin on every topic) |
//! | `POST`/`GET /v1/alerts/rules`, `GET`/`DELETE /v1/alerts/rules/{name}`, `GET /v1/alerts` | `admin:*` (rules post from the server to any allowed host and watch node-wide figures) |
//! | `GET /v1/stats/history`, `GET /v1/stats/top` | a valid token; the handler asks `consume` or `admin` on the query's `topic` (`top` ranks only such topics) |
//! | `GET /v1/cluster`, any other path | a valid token (then the router's 404/405) |
//!
//! Dead-letter topics are ordinary topics: reading, subscribing to or redriving one takes
//! grants on its own name (`consume:orders.*` covers `orders.billing.dlq`).

use axum::http::Method;
use percent_encoding::percent_decode_str;

use super::scope::Action;

/// What a route demands of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Open to everyone, even with auth on: the probes, and the console's page and files.
    Public,
    /// The API documents: open when `docs_public`, else like [`Rule::Authenticated`].
    Docs,
    /// The metrics exposition: open when `metrics_public`, else like [`Rule::Authenticated`].
    Metrics,
    /// Any valid token.
    Authenticated,
    /// `action` on the `{topic}` of the path.
    Topic(Action),
    /// Any grant on the `{topic}` of the path.
    AnyOnTopic,
    /// `admin` on the topic named by this top-level string field of the JSON body.
    AdminOnBody(&'static str),
    /// `action` on `{topic}`, and `admin` on the topic named by this body field if present.
    TopicAndBody(Action, &'static str),
    /// `admin` on every topic (an `admin:*` grant): cluster administration changes what
    /// every topic runs on.
    ClusterAdmin,
}

/// What kind of load a route is, for the edge's budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// An ordinary request under `request_timeout_ms`.
    Plain,
    /// A produce: its body is charged to the in-flight produce bytes.
    Produce,
    /// A long-poll (always, or only with a `wait_ms` query above 0): holds a long-poll slot
    /// and gets the long-poll timeout.
    LongPoll {
        /// Whether only a `wait_ms` query parameter above 0 makes it a long-poll.
        only_with_wait_query: bool,
    },
    /// A Server-Sent Events stream: holds a stream slot, no request timeout.
    Stream,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteRule {
    /// The method.
    pub method: &'static str,
    /// The path pattern; `{name}` is one segment.
    pub pattern: &'static str,
    /// Who may call it.
    pub rule: Rule,
    /// What load it is.
    pub load: Load,
}

const fn row(method: &'static str, pattern: &'static str, rule: Rule, load: Load) -> RouteRule {
    RouteRule {
        method,
        pattern,
        rule,
        load,
    }
}

const PLAIN: Load = Load::Plain;
const POLL: Load = Load::LongPoll {
    only_with_wait_query: false,
};
const SUB: &str = "/v1/topics/{topic}/subscriptions/{sub}";

/// Every route's rule. Keep in step with `openapi::api_router` (a test checks every
/// documented operation has a row).
pub(crate) const ROUTES: &[RouteRule] = &[
    row("GET", "/healthz", Rule::Public, PLAIN),
    row("GET", "/readyz", Rule::Public, PLAIN),
    row("GET", "/ui", Rule::Public, PLAIN),
    row("GET", "/ui/{asset}", Rule::Public, PLAIN),
    row("GET", "/docs", Rule::Docs, PLAIN),
    row("GET", "/openapi.json", Rule::Docs, PLAIN),
    row("GET", "/metrics", Rule::Metrics, PLAIN),
    row("GET", "/v1/cluster", Rule::Authenticated, PLAIN),
    // The topic is a query parameter: the handlers check `consume` or `admin` on it (and
    // `top` lists only such topics).
    row("GET", "/v1/stats/history", Rule::Authenticated, PLAIN),
    row("GET", "/v1/stats/top", Rule::Authenticated, PLAIN),
    row(
        "POST",
        "/v1/cluster/partitions/{topic}/{partition}/leader",
        Rule::ClusterAdmin,
        PLAIN,
    ),
    row("POST", "/v1/cluster/rebalance", Rule::ClusterAdmin, PLAIN),
    row(
        "POST",
        "/v1/cluster/nodes/{node}/drain",
        Rule::ClusterAdmin,
        PLAIN,
    ),
    row(
        "DELETE",
        "/v1/cluster/nodes/{node}",
        Rule::ClusterAdmin,
        PLAIN,
    ),
    row("POST", "/v1/alerts/rules", Rule::ClusterAdmin, PLAIN),
    row("GET", "/v1/alerts/rules", Rule::ClusterAdmin, PLAIN),
    row("GET", "/v1/alerts/rules/{name}", Rule::ClusterAdmin, PLAIN),
    row(
        "DELETE",
        "/v1/alerts/rules/{name}",
        Rule::ClusterAdmin,
        PLAIN,
    ),
    row("GET", "/v1/alerts", Rule::ClusterAdmin, PLAIN),
    row("POST", "/v1/topics", Rule::AdminOnBody("name"), PLAIN),
    row("GET", "/v1/topics", Rule::Authenticated, PLAIN),
    row("GET", "/v1/topics/{topic}", Rule::AnyOnTopic, PLAIN),
    row(
        "PATCH",
        "/v1/topics/{topic}",
        Rule::Topic(Action::Admin),
        PLAIN,
    ),
    row(
        "DELETE",
        "/v1/topics/{topic}",
        Rule::Topic(Action::Admin),
        PLAIN,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/messages",
        Rule::Topic(Action::Produce),
        Load::Produce,
    ),
    row(
        "GET",
        "/v1/topics/{topic}/messages",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "GET",
        "/v1/topics/{topic}/messages/{id}",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "DELETE",
        "/v1/topics/{topic}/messages/{id}",
        Rule::Topic(Action::Produce),
        PLAIN,
    ),
    row(
        "GET",
        "/v1/topics/{topic}/partitions/{partition}/messages",
        Rule::Topic(Action::Consume),
        Load::LongPoll {
            only_with_wait_query: true,
        },
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions",
        Rule::TopicAndBody(Action::Admin, "dead_letter_topic"),
        PLAIN,
    ),
    row(
        "GET",
        "/v1/topics/{topic}/subscriptions",
        Rule::AnyOnTopic,
        PLAIN,
    ),
    row("GET", SUB, Rule::AnyOnTopic, PLAIN),
    row(
        "PATCH",
        SUB,
        Rule::TopicAndBody(Action::Admin, "dead_letter_topic"),
        PLAIN,
    ),
    row("DELETE", SUB, Rule::Topic(Action::Admin), PLAIN),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/receive",
        Rule::Topic(Action::Consume),
        POLL,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/ack",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/nack",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/extend",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/seek",
        Rule::Topic(Action::Consume),
        PLAIN,
    ),
    row(
        "GET",
        "/v1/topics/{topic}/subscriptions/{sub}/stream",
        Rule::Topic(Action::Consume),
        Load::Stream,
    ),
    row(
        "POST",
        "/v1/topics/{topic}/subscriptions/{sub}/redrive",
        Rule::Topic(Action::Admin),
        PLAIN,
    ),
];

/// What the table says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouteAccess {
    /// Who may call it.
    pub rule: Rule,
    /// What load it is.
    pub load: Load,
    /// The `{topic}` segment, percent-decoded, if the route has one.
    pub topic: Option<String>,
}

/// The path's segments, percent-decoded, empty ones (a trailing or doubled slash) dropped,
/// so every spelling of a topic's path yields the same topic name.
pub(crate) fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect()
}

/// The row of [`ROUTES`] for a request, and the path's `{topic}`; `None` for unknown routes.
pub(crate) fn lookup(method: &Method, path: &str) -> Option<(&'static RouteRule, Option<String>)> {
    let segments = segments(path);
    ROUTES
        .iter()
        .filter(|route| route.method == method.as_str())
        .find_map(|route| match_pattern(route.pattern, &segments).map(|topic| (route, topic)))
}

/// Looks a request up in [`ROUTES`]; unknown routes need a valid token.
pub(crate) fn classify(method: &Method, path: &str) -> RouteAccess {
    if let Some((route, topic)) = lookup(method, path) {
        return RouteAccess {
            rule: route.rule,
            load: route.load,
            topic,
        };
    }
    let segments = segments(path);
    let topic = match segments.as_slice() {
        [v1, topics, topic, ..] if v1 == "v1" && topics == "topics" => Some(topic.clone()),
        _ => None,
    };
    RouteAccess {
        rule: Rule::Authenticated,
        load: Load::Plain,
        topic,
    }
}

/// `Some(topic)` when `segments` match `pattern` (`topic` is `None` for topic-less routes).
/// Walks the pattern in place: this runs for every row of [`ROUTES`] on every request.
fn match_pattern(pattern: &str, segments: &[String]) -> Option<Option<String>> {
    let mut parts = pattern.split('/').filter(|p| !p.is_empty());
    let mut topic = None;
    for segment in segments {
        let part = parts.next()?;
        if part == "{topic}" {
            topic = Some(segment);
        } else if !(part.starts_with('{') || part == segment) {
            return None;
        }
    }
    if parts.next().is_some() {
        return None;
    }
    Some(topic.cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_a_topic_path_name_the_same_topic() {
        for path in [
            "/v1/topics/orders.eu/messages",
            "/v1/topics/orders%2Eeu/messages",
            "/v1/topics/orders.eu/messages/",
            "//v1/topics/orders.eu//messages",
        ] {
            let access = classify(&Method::POST, path);
            assert_eq!(access.rule, Rule::Topic(Action::Produce), "{path}");
            assert_eq!(access.topic.as_deref(), Some("orders.eu"), "{path}");
        }
    }

    #[test]
    fn unknown_routes_need_a_token_and_probes_need_nothing() {
        assert_eq!(classify(&Method::GET, "/nowhere").rule, Rule::Authenticated);
        assert_eq!(
            classify(&Method::PUT, "/v1/topics/t").rule,
            Rule::Authenticated
        );
        assert_eq!(classify(&Method::GET, "/healthz").rule, Rule::Public);
        assert_eq!(
            classify(&Method::POST, "/v1/topics/t/subscriptions/s/redrive").rule,
            Rule::Topic(Action::Admin)
        );
    }
}
