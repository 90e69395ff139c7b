//! The router: [`app`] wires the documented routes, the problem+json fallbacks for unknown
//! routes and methods, and the middleware every response passes through (request id, tracing,
//! body limit, request metrics ([`crate::governance::metrics`]), and the [`edge`]: auth, rate
//! limits, budgets, timeouts). [`AppState`] is what handlers share.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{Method, Uri};
use broker_core::Broker;
use broker_core::cluster_node::ClusterNode;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::{Level, Span};

use crate::config::AlertSettings;
use crate::governance::alerts::{Alerts, RuleBook};
use crate::http::edge::{self, Edge};
use crate::http::problem::ApiError;
use crate::{governance::metrics, openapi};

/// What every handler shares: the broker, the HTTP limits, and the draining flag. One `Arc`
/// (axum clones the state for every extractor of every request; its fields are reached
/// through [`Shared`]).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The fields of [`AppState`].
pub struct Shared {
    /// The embedded broker.
    pub broker: Arc<Broker>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Auth, rate limits and budgets (see [`crate::http::edge`]).
    pub edge: Arc<Edge>,
    /// In a cluster: this node's part in it (topic admin goes through its controller).
    pub cluster: Option<Arc<ClusterNode>>,
    /// In a cluster: when each other node was last heard from.
    pub liveness: Option<crate::cluster::Liveness>,
    /// Alert rules, active alerts and the webhook outbox (see [`crate::routes::alerts`]).
    pub alerts: Arc<Alerts>,
    /// The per-minute history of this node's topics and subscriptions.
    pub history: Arc<crate::governance::history::History>,
    /// The synthetic probe's state (off unless [`AppState::with_probe`] gave one).
    pub probe: Arc<crate::governance::probe::ProbeHealth>,
    /// In a cluster: the other leaders' last answers to this node's gathers.
    pub remote_looks: crate::fanout::gather_looks::RemoteLooks,
    draining: AtomicBool,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// State around an open broker, without auth and with default limits.
    pub fn new(broker: Arc<Broker>, max_body_bytes: usize) -> Self {
        AppState::with_edge(broker, Edge::anonymous(max_body_bytes))
    }

    /// State around an open broker with this edge. Installs the metrics recorder if no
    /// server did yet, so `/metrics` works for an app built without [`crate::serve`].
    pub fn with_edge(broker: Arc<Broker>, edge: Edge) -> Self {
        let alerts = Arc::new(Alerts::new(&AlertSettings::default(), RuleBook::default()));
        AppState::with_alerts(broker, edge, alerts)
    }

    /// State around an open broker with this edge and these alerts (whose tasks the caller
    /// runs, see [`Alerts::start`]).
    pub fn with_alerts(broker: Arc<Broker>, edge: Edge, alerts: Arc<Alerts>) -> Self {
        broker.set_memory_budget(edge.memory.clone());
        metrics::install();
        AppState(Arc::new(Shared {
            broker,
            max_body_bytes: edge.max_body_bytes,
            edge: Arc::new(edge),
            cluster: None,
            liveness: None,
            alerts,
            history: Arc::new(crate::governance::history::History::in_memory(
                Default::default(),
            )),
            probe: Arc::new(crate::governance::probe::ProbeHealth::off()),
            remote_looks: Default::default(),
            draining: AtomicBool::new(false),
        }))
    }

    /// State of a cluster node: [`AppState::with_alerts`] steering `cluster`.
    pub fn clustered(
        broker: Arc<Broker>,
        edge: Edge,
        cluster: Arc<ClusterNode>,
        liveness: crate::cluster::Liveness,
        alerts: Arc<Alerts>,
    ) -> Self {
        broker.set_memory_budget(edge.memory.clone());
        metrics::install();
        AppState(Arc::new(Shared {
            broker,
            max_body_bytes: edge.max_body_bytes,
            edge: Arc::new(edge),
            cluster: Some(cluster),
            liveness: Some(liveness),
            alerts,
            history: Arc::new(crate::governance::history::History::in_memory(
                Default::default(),
            )),
            probe: Arc::new(crate::governance::probe::ProbeHealth::off()),
            remote_looks: Default::default(),
            draining: AtomicBool::new(false),
        }))
    }

    /// This state with `history` in place of the in-memory one it was built with. Call it
    /// before the state is shared (cloned); a shared state is returned unchanged.
    pub fn with_history(mut self, history: Arc<crate::governance::history::History>) -> Self {
        match Arc::get_mut(&mut self.0) {
            Some(shared) => shared.history = history,
            None => tracing::warn!("the app state is shared: the history is not replaced"),
        }
        self
    }

    /// This state with `probe` in place of the idle one it was built with. Call it before
    /// the state is shared (cloned); a shared state is returned unchanged.
    pub fn with_probe(mut self, probe: Arc<crate::governance::probe::ProbeHealth>) -> Self {
        match Arc::get_mut(&mut self.0) {
            Some(shared) => shared.probe = probe,
            None => tracing::warn!("the app state is shared: the probe is not replaced"),
        }
        self
    }

    /// Starts draining: `/readyz` turns 503 and pending long-polls return what they have
    /// within one [`crate::http::long_poll::LONG_POLL_SLICE_MS`].
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the server is draining before shutdown.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// The whole HTTP application over `state`.
pub fn app(state: AppState) -> Router {
    let max_body_bytes = state.max_body_bytes;
    let (router, _) = openapi::api_router().split_for_parts();
    let router = router
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    // Only a cluster node forwards: a single node pays nothing for the layer.
    let router = match state.cluster {
        Some(_) => router.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::fanout::forward::forward,
        )),
        None => router,
    };
    router
        .layer(axum::middleware::from_fn(
            crate::http::internal_topics::hide,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            edge::edge,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state,
            metrics::track_requests,
        ))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
                )
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(DefaultBodyLimit::max(max_body_bytes)),
        )
}

/// The span of one request: method, path and request id, so every log line of the request
/// (a 500's detail included) can be matched to the `X-Request-Id` the client saw.
fn request_span(request: &Request) -> Span {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|id| id.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        request_id,
    )
}

async fn route_not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::RouteNotFound {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}
