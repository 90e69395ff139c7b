//! HTTP itself: the accept loop and serving, the edge every request passes, the problem+json
//! errors, extractors, and who a request comes from.
//!
//! # Layout
//! - [`server`]: [`server::serve`] (listener, settings, shutdown future) and
//!   [`server::RunningServer`] (a background server on an ephemeral port, for tests).
//! - [`accept`]: the accept loop: connection cap, TCP keepalive, header-read timeout, header
//!   limits, graceful shutdown; [`io_timeout`]: the write timeout of a connection whose client
//!   does not read.
//! - [`edge`]: the middleware every request passes: [`head_size`] (431), [`browser_guard`]
//!   (`Host` against DNS rebinding, `Origin`), the route → access table
//!   ([`crate::auth::policy`]), rate limits, budgets and timeouts of [`crate::limits`];
//!   [`client_addr`]: peer vs `X-Forwarded-For`; [`internal_topics`]: request paths naming
//!   the server's own topics answer 404.
//! - [`problem`]: [`problem::ApiError`], its one `IntoResponse`, and the ONE mapping from
//!   [`broker_core::BrokerError`] to status and `code`; [`codes`]: every stable code.
//! - [`extract`]: JSON, path and query extractors whose rejections become problem+json.
//! - [`long_poll`]: long-polls cut into one-second broker waits, so draining never cancels a
//!   broker call.
//! - [`produce_origin`]: who produced a batch (principal, client address, node), stored with
//!   its messages for the message trace; [`consumed_by`]: who received, acked, nacked or
//!   extended, by the same rules, named in the subscription events.

pub mod accept;
pub(crate) mod browser_guard;
pub(crate) mod client_addr;
pub mod codes;
pub(crate) mod consumed_by;
pub mod edge;
pub(crate) mod extract;
pub(crate) mod head_size;
pub(crate) mod internal_topics;
pub(crate) mod io_timeout;
pub(crate) mod long_poll;
pub(crate) mod problem;
pub(crate) mod produce_origin;
pub mod server;
