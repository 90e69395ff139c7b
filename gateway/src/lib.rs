//! Wharf's HTTP gateway: the REST API in front of the embedded broker, and the `wharf` binary.
//!
//! # Layout
//! - [`server`]: [`serve`] (the testable entry point: listener, settings, shutdown future) and
//!   [`RunningServer`] (a background server on an ephemeral port, for tests).
//! - [`app`](mod@app): [`app()`] builds the router from [`AppState`]: routes, problem+json
//!   fallbacks for unknown routes and methods, request ids, tracing, the body limit.
//! - [`config`]: flags, `WHARF_*` env vars and the TOML file, validated and frozen into
//!   [`Settings`].
//! - [`routes`]: one file per resource: `health`, `topics`, `produce`, `delays` (cancel),
//!   `subscriptions`, `consume`, `seek`, `dead_letters` (redrive), `stream` (SSE),
//!   `partitions`, `docs`, `metrics`, `stats` (history and rankings). Request and reply DTOs live beside their handlers.
//! - [`problem`]: [`ApiError`], its one `IntoResponse`, and the ONE mapping from
//!   [`broker_core::BrokerError`] to status and `code`; [`codes`]: every stable code.
//! - [`extract`]: JSON, path and query extractors whose rejections become problem+json.
//! - [`auth`]: bearer JWTs → [`auth::Principal`], scope grants, and the ONE route → access
//!   table ([`auth::policy`]); [`edge`]: the middleware that applies it with the rate limits
//!   ([`rate_limit`]), budgets and timeouts of [`limits`]; [`client_addr`]: peer vs
//!   `X-Forwarded-For`; [`browser_guard`]: the edge's first check, which refuses requests
//!   that web pages make browsers send (`Host` against DNS rebinding, `Origin`).
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
//! - [`hex`]: [`hex::lower_hex`], the spelling of every MAC Wharf sends.
//! - [`periodic`]: [`periodic::Periodic`], a background task taking one look every period
//!   until stopped (the probe keeper, preferred-leader election).
//! - [`memory`]: the memory budget of request bodies and answers, and [`memory::ChargedBody`];
//!   [`io_timeout`]: the write timeout of a connection whose client does not read.
//! - [`accept`]: the accept loop: connection cap, TCP keepalive, header-read timeout, header
//!   limits, graceful shutdown.
//! - [`metrics`]: the process's Prometheus recorder and the request counter/timer;
//!   `routes::metrics` serves `GET /metrics` with gauges computed at scrape time.
//! - [`long_poll`]: long-polls cut into one-second broker waits, so draining never cancels a
//!   broker call.
//! - [`payload`]: text `value` vs binary `value_base64` on the wire.
//! - [`produce_errors`]: the node's one count of failed produce requests, which the
//!   per-minute history and the `produce_errors` alerts both read.
//! - [`produce_origin`]: who produced a batch (principal, client address, node), stored with
//!   its messages for the message trace; [`consumed_by`]: who received, acked, nacked or
//!   extended, by the same rules, named in the subscription events.
//! - [`json_text`]: JSON strings, numbers and `null` written as `serde_json` writes them, with
//!   a word-at-a-time escape scan.
//! - [`message_json`]: the receive reply, SSE message and offset-read page written straight
//!   from the broker's records, byte for byte as `serde_json` writes the derived DTOs.
//! - [`openapi`]: the OpenAPI 3.1 document generated from the handlers; [`docs_html`]: the
//!   offline HTML reference rendered from it; [`openapi_edge`]: the bearer scheme and the
//!   edge's 401/403/429/503 on every operation.
//! - [`cluster`]: the cluster port (Raft RPCs between nodes, checked against the cluster
//!   secret) and [`cluster::PeerClient`], the broker's transport to other nodes.
//! - [`alerts`]: rules and their validation, the webhook target policy, the evaluation
//!   state machine, signed event bodies, the delivery schedule and queue (a pure core), and
//!   the runtime, rule book, watcher and outbox that wire it to the broker and the network
//!   (served by `routes::alerts`).
//! - [`console`]: the web console's files (served at `/ui` by [`routes::console`]), built
//!   into the binary.
//! - [`history`]: the per-minute history of topics and subscriptions: the sampler, the
//!   request figures, the ring files under `<data>/history/`; `routes::stats` serves it.
//! - [`probe`]: the synthetic probe: a round trip through the node's internal probe topic
//!   every `probe_interval_ms`, its latency metric, its state in `/readyz` and the `probe`
//!   alert kind; [`internal_topics`]: request paths naming the server's own topics answer
//!   404.
//! - [`cli`]: the client commands of the `wharf` binary (`topics`, `produce`, `consume`,
//!   `read`, `stats`): an HTTP client of a running node.
//!
//! The gateway knows HTTP, not files: every domain rule is the broker's.

pub mod accept;
pub mod alerts;
pub mod app;
pub mod auth;
pub mod browser_guard;
pub mod cli;
pub mod client_addr;
pub mod cluster;
pub mod codes;
pub mod config;
pub mod console;
pub mod consumed_by;
pub mod docs_html;
pub mod edge;
pub mod extract;
pub mod fanout;
pub mod head_size;
pub mod hex;
pub mod history;
pub mod integral_floats;
pub mod internal_topics;
pub mod io_timeout;
pub mod json_object;
pub mod json_text;
pub mod limits;
pub mod long_poll;
pub mod memory;
pub mod message_json;
pub mod metrics;
pub mod openapi;
pub mod openapi_edge;
pub mod openapi_links;
pub mod openapi_rules;
pub mod payload;
pub mod periodic;
pub mod probe;
pub mod problem;
pub mod produce_errors;
pub mod produce_origin;
pub mod rate_limit;
pub mod routes;
pub mod server;

pub use app::{AppState, app};
pub use config::{ConfigError, ServeArgs, Settings};
pub use problem::{ApiError, Problem};
pub use server::{RunningServer, ServeError, serve};
