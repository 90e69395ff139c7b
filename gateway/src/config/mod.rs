//! Settings of `wharf serve`: parsed from flags, `WHARF_*` environment variables and a TOML
//! file (in that order of precedence, then defaults), validated as a whole, then frozen into
//! [`Settings`]. Every error names the setting and the value.
//!
//! # Layout
//! - `args`: [`ServeArgs`], the flags (each with its env var, by clap) and
//!   [`ServeArgs::load`], which merges them over the config file and freezes the result.
//! - `edge_args`: the edge's settings declared once: [`EdgeArgs`] (flags and env vars), their
//!   file keys, and [`EdgeRaw`] (their text before validation).
//! - `file`: the TOML config file: its known keys, unknown ones refused, values as text.
//! - `raw`: [`RawSettings`] and [`RawSettings::freeze`]: defaults, each value parsed and
//!   checked, then the relations between them (no anonymous access on a network address).
//! - `cluster`: [`ClusterArgs`] and [`ClusterSettings`]: node id, zone, cluster port, the
//!   initial voters and the shared secret; none of them means a single node.
//! - `edge`: [`EdgeSettings`], their defaults and their validation, with the auth keys.
//! - `alerts`: [`AlertSettings`]: the webhook allow-list, the server's signing secret, the
//!   evaluation tick.
//! - `probe`: `probe_interval_ms`, the synthetic probe's period ([`DEFAULT_PROBE_INTERVAL_MS`]).
//! - `values`: one setting's text into a number, a number within a range, or a boolean.
//! - `settings`: [`Settings`], the frozen result, and the server's defaults
//!   ([`DEFAULT_LISTEN`], …).
//! - `error`: [`ConfigError`].

mod alerts;
mod args;
mod cluster;
mod edge;
mod edge_args;
mod error;
mod file;
mod probe;
mod raw;
mod settings;
mod values;

pub use alerts::{
    AlertRaw, AlertSettings, DEFAULT_ALERT_TICK_MS, MAX_ALERT_TICK_MS, MIN_ALERT_TICK_MS,
};
pub use args::ServeArgs;
pub use cluster::{
    ClusterArgs, ClusterSecret, ClusterSettings, DEFAULT_ZONE, MAX_PEERS, MAX_ZONE_LEN,
    MIN_CLUSTER_SECRET_BYTES,
};
pub use edge::EdgeSettings;
pub use edge_args::{EdgeArgs, EdgeRaw};
pub use error::ConfigError;
pub use probe::{DEFAULT_PROBE_INTERVAL_MS, MAX_PROBE_INTERVAL_MS, MIN_PROBE_INTERVAL_MS};
pub use raw::RawSettings;
pub use settings::{
    DEFAULT_DATA_DIR, DEFAULT_FSYNC, DEFAULT_HISTORY, DEFAULT_LISTEN, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_TRACE_INDEX, MIN_MAX_BODY_BYTES, Settings,
};
