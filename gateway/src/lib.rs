//! Wharf's HTTP gateway: the REST API in front of the embedded broker, and the `wharf` binary.
//!
//! # Layout
//! - [`app`](mod@app): [`app()`] builds the router from [`AppState`]: routes, problem+json
//!   fallbacks for unknown routes and methods, request ids, tracing, the body limit.
//! - [`routes`]: the handlers, one file per resource: `health`, `topics`, `produce`, `delays`
//!   (cancel), `subscriptions`, `consume`, `seek`, `dead_letters` (redrive), `stream` (SSE),
//!   `partitions`, `docs`, `metrics`, `stats` (history and rankings).
//! - [`api`]: the wire types the handlers take and answer (request bodies, path and query
//!   parameters, response bodies, the headers they name), one file per resource as in
//!   [`routes`]; the OpenAPI document's schemas, shared with [`fanout`].
//! - [`http`]: serving ([`serve`], [`RunningServer`]), the accept loop, the edge every
//!   request passes, [`ApiError`] and the ONE mapping of broker errors to status and `code`,
//!   extractors, who a request comes from.
//! - [`auth`]: bearer JWTs → [`auth::Principal`], scope grants, and the ONE route → access
//!   table ([`auth::policy`]).
//! - [`limits`]: every bound of the edge with its reason, the rate limits
//!   ([`limits::rate`]) and the memory budget of bodies and answers ([`limits::memory`]).
//! - [`json`]: the hot answers written straight from the broker's records, and the JSON
//!   writers they use.
//! - [`config`]: flags, `WHARF_*` env vars and the TOML file, validated and frozen into
//!   [`Settings`].
//! - [`openapi`]: the OpenAPI 3.1 document generated from the handlers, the edge's part of
//!   it, and the offline HTML reference.
//! - [`cluster`]: the cluster port (Raft RPCs between nodes, checked against the cluster
//!   secret), [`cluster::PeerClient`] (the broker's transport to other nodes) and the
//!   node's background keepers.
//! - [`fanout`]: in a cluster, a request one node cannot answer alone, forwarded, gathered or
//!   scattered. [`fanout::forward`]: a request answered `not_leader` here goes on to the leader
//!   the cluster metadata names (one hop), and its answer back; [`fanout::gather`]: a receive
//!   gathered from several partition leaders, and acks scattered to them, with
//!   [`fanout::gather_looks`] remembering each leader's last answer; [`fanout::scatter`]: a
//!   produce batch split over its partitions' leaders, answered as one reply;
//!   [`fanout::topic_stats`]: a topic's stats of the partitions held on other nodes, asked of
//!   their leaders; [`fanout::subscription_figures`]: a subscription's stats summed over its
//!   partitions' leaders; [`fanout::ask_leader`]: the one `GET` both make of a leader;
//!   [`fanout::trace_gather`]: a message lookup asks the holders of the partitions this node
//!   lacks; [`fanout::peer`]: one call to another node on a client's behalf, which gather,
//!   scatter and the trace lookup send their parts through.
//! - [`governance`]: metrics, the per-minute history, alerts, the synthetic probe and the web
//!   console.
//! - [`cli`]: the client commands of the `wharf` binary (`topics`, `produce`, `consume`,
//!   `read`, `stats`): an HTTP client of a running node.
//!
//! The gateway knows HTTP, not files: every domain rule is the broker's.

// What nothing outside the crate uses is `pub(crate)`, and stays so.
#![warn(unreachable_pub)]
// The layout maps link the crate's inner modules for its contributors, who read them with
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod api;
pub(crate) mod app;
pub mod auth;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod fanout;
pub mod governance;
pub mod http;
pub(crate) mod json;
pub mod limits;
pub mod openapi;
pub mod routes;

pub use app::{AppState, app};
pub use config::{ConfigError, ServeArgs, Settings};
pub use http::problem::{ApiError, Problem};
pub use http::server::{RunningServer, ServeError, serve};
