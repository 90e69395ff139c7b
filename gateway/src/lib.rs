//! Wharf's HTTP gateway: the REST API in front of the embedded broker, and the `wharf` binary.
//!
//! # Layout
//! - [`server`]: [`serve`] (the testable entry point: listener, settings, shutdown future) and
//!   [`RunningServer`] (a background server on an ephemeral port, for tests).
//! - [`app`](mod@app): [`app()`] builds the router from [`AppState`]: routes, problem+json
//!   fallbacks for unknown routes and methods, request ids, tracing, the body limit.
//! - [`config`]: flags, `WHARF_*` env vars and the TOML file, validated and frozen into
//!   [`Settings`].
//! - [`routes`]: one file per resource: `health`, `topics`, `produce`, `subscriptions`,
//!   `consume`, `partitions`, `docs`. Request and reply DTOs live beside their handlers.
//! - [`problem`]: [`ApiError`], its one `IntoResponse`, and the ONE mapping from
//!   [`broker_core::BrokerError`] to status and `code`; [`codes`]: every stable code.
//! - [`extract`]: JSON, path and query extractors whose rejections become problem+json.
//! - [`long_poll`]: long-polls cut into one-second broker waits, so draining never cancels a
//!   broker call.
//! - [`payload`]: text `value` vs binary `value_base64` on the wire.
//! - [`openapi`]: the OpenAPI 3.1 document generated from the handlers; [`docs_html`]: the
//!   offline HTML reference rendered from it.
//!
//! The gateway knows HTTP, not files: every domain rule is the broker's.

pub mod app;
pub mod codes;
pub mod config;
pub mod docs_html;
pub mod extract;
pub mod long_poll;
pub mod openapi;
pub mod payload;
pub mod problem;
pub mod routes;
pub mod server;

pub use app::{AppState, app};
pub use config::{ConfigError, ServeArgs, Settings};
pub use problem::{ApiError, Problem};
pub use server::{RunningServer, ServeError, serve};
