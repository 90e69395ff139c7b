//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations. Routes
//! are registered through [`api_router`] only, so every served route is documented by
//! construction.
//!
//! [`edge`]: the bearer scheme and the edge's 401/403/408/413/429/431/503 on every
//! operation; [`links`] and [`rules`]: links between operations and the rules the document
//! keeps; [`html`]: the offline HTML reference rendered from it.

pub(crate) mod edge;
pub(crate) mod html;
pub(crate) mod links;
pub(crate) mod rules;

use std::sync::LazyLock;

use utoipa::OpenApi;
use utoipa::openapi::OpenApi as Document;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::AppState;
use crate::http::problem::Problem;
use crate::routes::{
    alerts, cluster, cluster_admin, console, consume, dead_letters, delays, docs, health, metrics,
    partitions, produce, seek, stats, stream, subscriptions, topics, trace,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Wharf",
        description = "An HTTP/REST messaging gateway: produce to partitioned topics (with \
            idempotency ids and delays of up to a year), consume through subscriptions with \
            long-poll receive or Server-Sent Events, leases, acks, retries, dead letters and \
            redrive, tag filters, per-key order and seek (replay), and read the log by \
            offset. Errors are RFC 9457 problem details \
            (`application/problem+json`) with a stable `code`. Every response carries \
            `X-Request-Id`."
    ),
    tags(
        (name = "topics", description = "Create, describe, change and delete topics."),
        (name = "messages", description = "Produce messages and read partitions by offset."),
        (name = "subscriptions", description = "Consumer groups on a topic."),
        (name = "consume",
            description = "Receive (or stream), ack, nack and extend through a subscription; \
                seek and redrive it."),
        (name = "cluster",
            description = "The cluster: nodes and zones, the controller, partition leaders and \
                replicas."),
        (name = "alerts",
            description = "Alert rules whose firing and resolved events are posted, signed, \
                to a webhook; the alerts firing now."),
        (name = "health", description = "Liveness and readiness probes."),
        (name = "docs", description = "This document and the reference page."),
        (name = "metrics", description = "Prometheus metrics of the node."),
        (name = "console", description = "The web console: a page and its files."),
        (name = "stats",
            description = "Per-minute history of topics and subscriptions, and rankings."),
    ),
    components(schemas(Problem))
)]
struct ApiDoc;

/// Every route of the API with its documentation, before state is attached.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(topics::create_topic, topics::list_topics))
        .routes(routes!(
            topics::describe_topic,
            topics::update_topic,
            topics::delete_topic
        ))
        .routes(routes!(produce::produce, trace::messages_by_key))
        .routes(routes!(delays::cancel_delayed, trace::trace_message))
        .routes(routes!(partitions::read_partition))
        .routes(routes!(
            subscriptions::create_subscription,
            subscriptions::list_subscriptions
        ))
        .routes(routes!(
            subscriptions::describe_subscription,
            subscriptions::delete_subscription
        ))
        .routes(routes!(consume::receive))
        .routes(routes!(consume::ack))
        .routes(routes!(consume::nack))
        .routes(routes!(consume::extend))
        .routes(routes!(seek::seek))
        .routes(routes!(dead_letters::redrive))
        .routes(routes!(stream::stream))
        .routes(routes!(cluster::cluster))
        .routes(routes!(cluster_admin::move_leader))
        .routes(routes!(cluster_admin::rebalance))
        .routes(routes!(cluster_admin::drain_node))
        .routes(routes!(cluster_admin::remove_node))
        .routes(routes!(alerts::create_rule, alerts::list_rules))
        .routes(routes!(alerts::get_rule, alerts::delete_rule))
        .routes(routes!(alerts::active_alerts))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(docs::openapi_json))
        .routes(routes!(docs::docs_page))
        .routes(routes!(metrics::metrics))
        .routes(routes!(console::console_page))
        .routes(routes!(console::console_asset))
        .routes(routes!(stats::history))
        .routes(routes!(stats::top))
}

static DOCUMENT: LazyLock<Document> = LazyLock::new(|| {
    let mut document = api_router().split_for_parts().1;
    crate::openapi::edge::document_edge(&mut document);
    crate::openapi::links::document_links(&mut document);
    crate::openapi::rules::document_rules(&mut document);
    document
});
static PRETTY_JSON: LazyLock<String> = LazyLock::new(|| {
    let mut json = DOCUMENT.to_pretty_json().unwrap_or_default();
    json.push('\n');
    json
});
static DOCS_HTML: LazyLock<String> = LazyLock::new(|| {
    let value = serde_json::to_value(&*DOCUMENT).unwrap_or_default();
    html::render(&value)
});

/// The OpenAPI document.
pub fn document() -> &'static Document {
    &DOCUMENT
}

/// The document as pretty JSON with a trailing newline: what `/openapi.json` serves, `wharf
/// openapi` prints and `openapi/openapi.json` holds.
pub fn pretty_json() -> &'static str {
    &PRETTY_JSON
}

/// The HTML reference page rendered from the document.
pub fn docs_html() -> &'static str {
    &DOCS_HTML
}
