//! Settings of `wharf serve`: parsed from flags, `WHARF_*` environment variables and a TOML
//! file (in that order of precedence, then defaults), validated as a whole, then frozen into
//! [`Settings`]. Every error names the setting and the value.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use broker_core::config::{DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
use broker_core::limits::MAX_FRAME_BYTES;
use broker_core::{BrokerConfig, FsyncPolicy};
use serde::Deserialize;

use crate::auth::{Authenticator, DEFAULT_KID, KeySet, KeySpec, keys};
use crate::client_addr::IpRange;
use crate::limits::*;

/// Default listen address: loopback, so a fresh install is not open to the network.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default data folder, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./wharf-data";
/// Default fsync policy: an ack means the data is on disk.
pub const DEFAULT_FSYNC: &str = "always";
/// Default largest request body: 8 MiB (API.md), room for a full batch of modest messages.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Smallest `max_body_bytes` accepted: below 1 KiB even a small JSON batch cannot be sent.
pub const MIN_MAX_BODY_BYTES: usize = 1024;

/// A setting that failed to load or validate.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A setting's value is malformed or out of range.
    #[error("invalid setting {setting} = {value:?}: {reason}")]
    Invalid {
        /// The setting's file key (flags and env vars are named after it).
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has unknown keys.
    #[error("invalid config file {path}: {source}")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// The config file has a key no setting is named after.
    #[error("invalid config file {path}: unknown key `{key}`")]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
    /// A verification key could not be loaded.
    #[error("invalid auth key: {0}")]
    Key(#[from] crate::auth::KeyError),
    /// Asked to serve a non-loopback address with no keys and no `--allow-anonymous`.
    #[error(
        "refusing to listen on {listen} without authentication: anyone who can reach it could \
         read and delete every topic. Set WHARF_AUTH_HS256_SECRET (at least 32 bytes; mint \
         tokens with `wharf token`), or configure keys, or pass --allow-anonymous \
         (WHARF_ALLOW_ANONYMOUS=true) to serve without auth anyway"
    )]
    AnonymousOnNetwork {
        /// The address asked for.
        listen: SocketAddr,
    },
}

/// Declares the edge settings once: their flags (with env vars) and their raw text form.
macro_rules! edge_settings {
    ($($(#[doc = $doc:literal])* $field:ident => $env:literal,)*) => {
        /// Flags of the edge (auth, limits, timeouts); each falls back to its env var, then
        /// to the config file key of the same name, then to its default in
        /// [`crate::limits`].
        #[derive(Debug, Clone, Default, clap::Args)]
        pub struct EdgeArgs {
            $($(#[doc = $doc])* #[arg(long, env = $env, hide_env_values = true)]
            pub $field: Option<String>,)*
        }

        /// Edge settings before validation, as text.
        #[derive(Clone, Default)]
        pub struct EdgeRaw {
            $(#[doc = concat!("See `", stringify!($field), "` in [`EdgeArgs`].")]
            pub $field: Option<String>,)*
        }

        /// Every edge setting's file key.
        const EDGE_KEYS: &[&str] = &[$(stringify!($field)),*];

        impl EdgeArgs {
            fn merge(self, file: &mut toml::Table) -> EdgeRaw {
                EdgeRaw {
                    $($field: self.$field.or_else(|| file.remove(stringify!($field)).map(value_text)),)*
                }
            }
        }
    };
}

edge_settings! {
    /// HS256 secret of key id `default` (at least 32 bytes); turns auth on.
    auth_hs256_secret => "WHARF_AUTH_HS256_SECRET",
    /// A JWKS file of verification keys; each key needs `kid` and `alg`.
    auth_jwks_file => "WHARF_AUTH_JWKS_FILE",
    /// When set, tokens must carry this `iss`.
    auth_issuer => "WHARF_AUTH_ISSUER",
    /// When set, tokens must carry this `aud`.
    auth_audience => "WHARF_AUTH_AUDIENCE",
    /// Clock skew tolerated on `exp`/`nbf`, in seconds [default: 10].
    auth_leeway_secs => "WHARF_AUTH_LEEWAY_SECS",
    /// Serve /docs and /openapi.json at all: true or false [default: true].
    expose_docs => "WHARF_EXPOSE_DOCS",
    /// /docs and /openapi.json without a token: true or false [default: false].
    docs_public => "WHARF_DOCS_PUBLIC",
    /// /metrics without a token: true or false [default: false].
    metrics_public => "WHARF_METRICS_PUBLIC",
    /// Proxies whose X-Forwarded-For is believed: comma-separated IPs or CIDRs [default: none].
    trusted_proxies => "WHARF_TRUSTED_PROXIES",
    /// Requests per second per principal; 0 (the default) is unlimited.
    principal_requests_per_second => "WHARF_PRINCIPAL_REQUESTS_PER_SECOND",
    /// Burst of every rate limit, in milliseconds of its rate [default: 1000].
    rate_limit_burst_ms => "WHARF_RATE_LIMIT_BURST_MS",
    /// Bytes that request bodies and answers may hold in memory at once [default: 96 MiB].
    max_memory_bytes => "WHARF_MAX_MEMORY_BYTES",
    /// Open connections at once [default: 1024].
    max_connections => "WHARF_MAX_CONNECTIONS",
    /// Pending long-polls at once [default: 512].
    max_long_polls => "WHARF_MAX_LONG_POLLS",
    /// Pending long-polls of one principal [default: 64].
    max_long_polls_per_principal => "WHARF_MAX_LONG_POLLS_PER_PRINCIPAL",
    /// Open SSE streams at once [default: 256].
    max_streams => "WHARF_MAX_STREAMS",
    /// Open SSE streams of one principal [default: 16].
    max_streams_per_principal => "WHARF_MAX_STREAMS_PER_PRINCIPAL",
    /// Time to send a request head, also the keep-alive idle timeout, ms [default: 10000].
    header_read_timeout_ms => "WHARF_HEADER_READ_TIMEOUT_MS",
    /// Time to send a request body, ms [default: 30000].
    body_read_timeout_ms => "WHARF_BODY_READ_TIMEOUT_MS",
    /// Longest request end to end (long-polls: 60000 + 5000), ms [default: 30000].
    request_timeout_ms => "WHARF_REQUEST_TIMEOUT_MS",
    /// Longest a response write may wait for a client that does not read, ms [default: 10000].
    write_timeout_ms => "WHARF_WRITE_TIMEOUT_MS",
    /// TCP keepalive idle time of accepted sockets, s; 0 is off [default: 60].
    tcp_keepalive_secs => "WHARF_TCP_KEEPALIVE_SECS",
    /// Most headers in one request [default: 64].
    max_headers => "WHARF_MAX_HEADERS",
    /// Most bytes in a request line and headers [default: 32 KiB].
    max_header_bytes => "WHARF_MAX_HEADER_BYTES",
}

impl std::fmt::Debug for EdgeRaw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeRaw").finish_non_exhaustive()
    }
}

/// A TOML value as setting text: strings as they are, numbers and booleans written out,
/// arrays joined with commas.
fn value_text(value: toml::Value) -> String {
    match value {
        toml::Value::String(text) => text,
        toml::Value::Array(items) => items
            .into_iter()
            .map(value_text)
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// The flags of `wharf serve`; each falls back to its `WHARF_*` environment variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, IP:port [default: 127.0.0.1:8080].
    #[arg(long, env = "WHARF_LISTEN")]
    pub listen: Option<String>,
    /// Folder for the broker's data [default: ./wharf-data].
    #[arg(long, env = "WHARF_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// TOML file with the same keys as these flags (listen, data_dir, fsync, segment_bytes,
    /// max_body_bytes).
    #[arg(long, env = "WHARF_CONFIG")]
    pub config: Option<PathBuf>,
    /// When to fsync: `always`, `never`, or an interval in milliseconds [default: always].
    #[arg(long, env = "WHARF_FSYNC")]
    pub fsync: Option<String>,
    /// Segment file size in bytes [default: 64 MiB].
    #[arg(long, env = "WHARF_SEGMENT_BYTES")]
    pub segment_bytes: Option<String>,
    /// Largest request body in bytes [default: 8 MiB].
    #[arg(long, env = "WHARF_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<String>,
    /// Serve without authentication on a non-loopback address (no keys configured).
    #[arg(long, env = "WHARF_ALLOW_ANONYMOUS")]
    pub allow_anonymous: bool,
    /// Auth, limits and timeouts.
    #[command(flatten)]
    pub edge: EdgeArgs,
}

/// The keys of the TOML config file other than the edge's ([`EDGE_KEYS`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    fsync: Option<toml::Value>,
    segment_bytes: Option<toml::Value>,
    max_body_bytes: Option<toml::Value>,
    allow_anonymous: Option<bool>,
    /// `[[auth_keys]]` tables: `kid`, `alg`, and `secret` or `file`.
    #[serde(default)]
    auth_keys: Vec<KeySpec>,
}

/// Settings before validation: every value optional and still text.
#[derive(Debug, Clone, Default)]
pub struct RawSettings {
    /// See [`Settings::listen`].
    pub listen: Option<String>,
    /// See [`Settings::data_dir`].
    pub data_dir: Option<PathBuf>,
    /// See [`Settings::fsync`].
    pub fsync: Option<String>,
    /// See [`Settings::segment_bytes`].
    pub segment_bytes: Option<String>,
    /// See [`Settings::max_body_bytes`].
    pub max_body_bytes: Option<String>,
    /// Serve without auth on a non-loopback address.
    pub allow_anonymous: bool,
    /// Keys from the config file's `[[auth_keys]]`.
    pub auth_keys: Vec<KeySpec>,
    /// Auth, limits and timeouts, as text.
    pub edge: EdgeRaw,
}

impl ServeArgs {
    /// Merges flags/env (already merged by clap) over the config file, then validates.
    pub fn load(self) -> Result<Settings, ConfigError> {
        let (file, edge) = match &self.config {
            Some(path) => read_file(path, self.edge)?,
            None => (
                FileSettings::default(),
                self.edge.merge(&mut toml::Table::new()),
            ),
        };
        RawSettings {
            listen: self.listen.or(file.listen),
            data_dir: self.data_dir.or(file.data_dir),
            fsync: self.fsync.or(file.fsync.map(value_text)),
            segment_bytes: self.segment_bytes.or(file.segment_bytes.map(value_text)),
            max_body_bytes: self.max_body_bytes.or(file.max_body_bytes.map(value_text)),
            allow_anonymous: self.allow_anonymous || file.allow_anonymous.unwrap_or(false),
            auth_keys: file.auth_keys,
            edge,
        }
        .freeze()
    }
}

/// Reads the file: edge keys are merged under `edge` flags, the rest must be known keys.
fn read_file(path: &Path, edge: EdgeArgs) -> Result<(FileSettings, EdgeRaw), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    let parse_error = |source| ConfigError::ParseFile {
        path: path.to_owned(),
        source,
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(parse_error)?;
    let mut edge_table = toml::Table::new();
    for key in EDGE_KEYS {
        if let Some(value) = table.remove(*key) {
            edge_table.insert((*key).to_owned(), value);
        }
    }
    let file = FileSettings::deserialize(toml::Value::Table(table)).map_err(parse_error)?;
    Ok((file, edge.merge(&mut edge_table)))
}

fn invalid(setting: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        setting,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

fn parse_number<T: std::str::FromStr>(setting: &'static str, text: &str) -> Result<T, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(setting, text, "expected a non-negative whole number"))
}

impl RawSettings {
    /// Fills in defaults, parses and validates every value and their relations.
    pub fn freeze(self) -> Result<Settings, ConfigError> {
        let listen_text = self.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            invalid(
                "listen",
                &listen_text,
                "expected IP:port, e.g. 127.0.0.1:8080",
            )
        })?;
        let data_dir = self
            .data_dir
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        if data_dir.as_os_str().is_empty() {
            return Err(invalid("data_dir", "", "must not be empty"));
        }
        let fsync_text = self.fsync.unwrap_or_else(|| DEFAULT_FSYNC.to_owned());
        let fsync = FsyncPolicy::parse(fsync_text.trim()).ok_or_else(|| {
            invalid(
                "fsync",
                &fsync_text,
                "expected always, never, or milliseconds > 0",
            )
        })?;
        let segment_bytes = match self.segment_bytes {
            Some(text) => parse_number::<u64>("segment_bytes", &text)?,
            None => DEFAULT_SEGMENT_BYTES,
        };
        if segment_bytes < MIN_SEGMENT_BYTES {
            return Err(invalid(
                "segment_bytes",
                &segment_bytes.to_string(),
                format!("must be at least {MIN_SEGMENT_BYTES}"),
            ));
        }
        let max_body_bytes = match self.max_body_bytes {
            Some(text) => parse_number::<usize>("max_body_bytes", &text)?,
            None => DEFAULT_MAX_BODY_BYTES,
        };
        if !(MIN_MAX_BODY_BYTES..=MAX_FRAME_BYTES).contains(&max_body_bytes) {
            return Err(invalid(
                "max_body_bytes",
                &max_body_bytes.to_string(),
                format!(
                    "must be {MIN_MAX_BODY_BYTES} to {MAX_FRAME_BYTES} (a body's batch must fit one log frame)"
                ),
            ));
        }
        let (auth, edge) = freeze_edge(self.edge, self.auth_keys)?;
        if !auth.enabled() && !listen.ip().is_loopback() && !self.allow_anonymous {
            return Err(ConfigError::AnonymousOnNetwork { listen });
        }
        Ok(Settings {
            listen,
            data_dir,
            fsync,
            segment_bytes,
            max_body_bytes,
            auth,
            edge,
        })
    }
}

/// The edge's limits and switches, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeSettings {
    /// Open connections at once.
    pub max_connections: usize,
    /// Time to send a request head; also the keep-alive idle timeout.
    pub header_read_timeout: Duration,
    /// Time to send a request body.
    pub body_read_timeout: Duration,
    /// Longest ordinary request, end to end.
    pub request_timeout: Duration,
    /// TCP keepalive idle time of accepted sockets; `None` is off.
    pub tcp_keepalive: Option<Duration>,
    /// Most headers in one request.
    pub max_headers: usize,
    /// Most bytes in a request line and its headers.
    pub max_header_bytes: usize,
    /// Bytes that request bodies and answers may hold in memory at once.
    pub max_memory_bytes: usize,
    /// Longest a response write may wait for the client to read; then the connection is
    /// closed.
    pub write_timeout: Duration,
    /// Pending long-polls at once, and per principal.
    pub max_long_polls: (usize, usize),
    /// Open SSE streams at once, and per principal.
    pub max_streams: (usize, usize),
    /// Requests per second per principal (0: unlimited).
    pub principal_requests_per_second: u32,
    /// Burst of every rate limit, in milliseconds of its rate.
    pub rate_limit_burst_ms: u64,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpRange>,
    /// Serve /docs and /openapi.json at all.
    pub expose_docs: bool,
    /// /docs and /openapi.json without a token.
    pub docs_public: bool,
    /// /metrics without a token.
    pub metrics_public: bool,
}

impl Default for EdgeSettings {
    /// The defaults of [`crate::limits`] (a test checks they pass validation unchanged).
    fn default() -> Self {
        EdgeSettings {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            body_read_timeout: Duration::from_millis(DEFAULT_BODY_READ_TIMEOUT_MS),
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            tcp_keepalive: Some(Duration::from_secs(DEFAULT_TCP_KEEPALIVE_SECS)),
            max_headers: DEFAULT_MAX_HEADERS,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            write_timeout: Duration::from_millis(DEFAULT_WRITE_TIMEOUT_MS),
            max_long_polls: (DEFAULT_MAX_LONG_POLLS, DEFAULT_MAX_LONG_POLLS_PER_PRINCIPAL),
            max_streams: (DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_PRINCIPAL),
            principal_requests_per_second: DEFAULT_PRINCIPAL_REQUESTS_PER_SECOND,
            rate_limit_burst_ms: DEFAULT_RATE_LIMIT_BURST_MS,
            trusted_proxies: Vec::new(),
            expose_docs: true,
            docs_public: false,
            metrics_public: false,
        }
    }
}

/// A number setting within `range`, or its default.
fn ranged<T>(
    setting: &'static str,
    text: Option<String>,
    default: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let value = match text {
        Some(text) => parse_number::<T>(setting, &text)?,
        None => default,
    };
    if !range.contains(&value) {
        return Err(invalid(
            setting,
            &value.to_string(),
            format!("must be {} to {}", range.start(), range.end()),
        ));
    }
    Ok(value)
}

fn boolean(
    setting: &'static str,
    text: Option<String>,
    default: bool,
) -> Result<bool, ConfigError> {
    match text.as_deref().map(str::trim) {
        None => Ok(default),
        Some("true" | "1" | "yes" | "on") => Ok(true),
        Some("false" | "0" | "no" | "off") => Ok(false),
        Some(other) => Err(invalid(setting, other, "expected true or false")),
    }
}

const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// Validates the edge settings and loads the keys.
fn freeze_edge(
    raw: EdgeRaw,
    file_keys: Vec<KeySpec>,
) -> Result<(Authenticator, EdgeSettings), ConfigError> {
    let mut keys = KeySet::default();
    if let Some(secret) = raw.auth_hs256_secret.filter(|s| !s.is_empty()) {
        keys.insert(DEFAULT_KID, keys::hs256(DEFAULT_KID, secret.as_bytes())?)?;
    }
    for spec in &file_keys {
        keys.insert(&spec.kid, spec.load()?)?;
    }
    if let Some(path) = raw.auth_jwks_file.filter(|s| !s.is_empty()) {
        keys.insert_jwks(Path::new(&path))?;
    }
    let leeway = ranged(
        "auth_leeway_secs",
        raw.auth_leeway_secs,
        DEFAULT_AUTH_LEEWAY_SECS,
        0..=300,
    )?;
    let non_empty = |text: Option<String>| text.filter(|t| !t.trim().is_empty());
    let auth = Authenticator::new(
        keys,
        non_empty(raw.auth_issuer),
        non_empty(raw.auth_audience),
        leeway,
    );
    let ms = |setting, text, default| {
        ranged(setting, text, default, 100..=MAX_TIMEOUT_MS).map(Duration::from_millis)
    };
    let trusted_proxies = raw
        .trusted_proxies
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry
                .parse()
                .map_err(|reason: String| invalid("trusted_proxies", entry, reason))
        })
        .collect::<Result<Vec<IpRange>, _>>()?;
    let keepalive = ranged(
        "tcp_keepalive_secs",
        raw.tcp_keepalive_secs,
        DEFAULT_TCP_KEEPALIVE_SECS,
        0..=7200,
    )?;
    let long_polls = ranged(
        "max_long_polls",
        raw.max_long_polls,
        DEFAULT_MAX_LONG_POLLS,
        1..=1_000_000,
    )?;
    let streams = ranged(
        "max_streams",
        raw.max_streams,
        DEFAULT_MAX_STREAMS,
        1..=1_000_000,
    )?;
    let edge = EdgeSettings {
        max_connections: ranged(
            "max_connections",
            raw.max_connections,
            DEFAULT_MAX_CONNECTIONS,
            1..=1_000_000,
        )?,
        header_read_timeout: ms(
            "header_read_timeout_ms",
            raw.header_read_timeout_ms,
            DEFAULT_HEADER_READ_TIMEOUT_MS,
        )?,
        body_read_timeout: ms(
            "body_read_timeout_ms",
            raw.body_read_timeout_ms,
            DEFAULT_BODY_READ_TIMEOUT_MS,
        )?,
        request_timeout: ms(
            "request_timeout_ms",
            raw.request_timeout_ms,
            DEFAULT_REQUEST_TIMEOUT_MS,
        )?,
        tcp_keepalive: (keepalive > 0).then(|| Duration::from_secs(keepalive)),
        max_headers: ranged(
            "max_headers",
            raw.max_headers,
            DEFAULT_MAX_HEADERS,
            8..=1024,
        )?,
        max_header_bytes: ranged(
            "max_header_bytes",
            raw.max_header_bytes,
            DEFAULT_MAX_HEADER_BYTES,
            MIN_MAX_HEADER_BYTES..=1024 * 1024,
        )?,
        max_memory_bytes: ranged(
            "max_memory_bytes",
            raw.max_memory_bytes,
            DEFAULT_MAX_MEMORY_BYTES,
            MIN_MAX_MEMORY_BYTES..=(1 << 40),
        )?,
        write_timeout: ms(
            "write_timeout_ms",
            raw.write_timeout_ms,
            DEFAULT_WRITE_TIMEOUT_MS,
        )?,
        max_long_polls: (
            long_polls,
            ranged(
                "max_long_polls_per_principal",
                raw.max_long_polls_per_principal,
                DEFAULT_MAX_LONG_POLLS_PER_PRINCIPAL.min(long_polls),
                1..=long_polls,
            )?,
        ),
        max_streams: (
            streams,
            ranged(
                "max_streams_per_principal",
                raw.max_streams_per_principal,
                DEFAULT_MAX_STREAMS_PER_PRINCIPAL.min(streams),
                1..=streams,
            )?,
        ),
        principal_requests_per_second: ranged(
            "principal_requests_per_second",
            raw.principal_requests_per_second,
            DEFAULT_PRINCIPAL_REQUESTS_PER_SECOND,
            0..=10_000_000,
        )?,
        rate_limit_burst_ms: ranged(
            "rate_limit_burst_ms",
            raw.rate_limit_burst_ms,
            DEFAULT_RATE_LIMIT_BURST_MS,
            10..=60_000,
        )?,
        trusted_proxies,
        expose_docs: boolean("expose_docs", raw.expose_docs, true)?,
        docs_public: boolean("docs_public", raw.docs_public, false)?,
        metrics_public: boolean("metrics_public", raw.metrics_public, false)?,
    };
    Ok((auth, edge))
}

/// Validated, frozen settings of one server.
#[derive(Debug, Clone)]
pub struct Settings {
    listen: SocketAddr,
    data_dir: PathBuf,
    fsync: FsyncPolicy,
    segment_bytes: u64,
    max_body_bytes: usize,
    auth: Authenticator,
    edge: EdgeSettings,
}

impl Settings {
    /// Token verification (disabled when no key is configured).
    pub fn auth(&self) -> &Authenticator {
        &self.auth
    }

    /// The edge's limits, timeouts and switches.
    pub fn edge(&self) -> &EdgeSettings {
        &self.edge
    }

    /// Defaults, with the given data folder and an ephemeral loopback port (for tests).
    pub fn ephemeral(data_dir: impl Into<PathBuf>) -> Result<Settings, ConfigError> {
        RawSettings {
            listen: Some("127.0.0.1:0".to_owned()),
            data_dir: Some(data_dir.into()),
            ..RawSettings::default()
        }
        .freeze()
    }

    /// Address to listen on.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// Folder holding the broker's data.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// When the log calls fsync.
    pub fn fsync(&self) -> FsyncPolicy {
        self.fsync
    }

    /// Segment file size in bytes.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// Largest request body accepted, in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The broker's configuration.
    pub fn broker_config(&self) -> BrokerConfig {
        let mut config = BrokerConfig::new(&self.data_dir);
        config.log.fsync = self.fsync;
        config.log.segment_bytes = self.segment_bytes;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(text.as_bytes()).expect("write");
        file
    }

    #[test]
    fn defaults_are_loopback_fsync_always_and_eight_mebibyte_bodies() {
        let settings = RawSettings::default().freeze().expect("defaults are valid");
        assert_eq!(settings.listen().to_string(), DEFAULT_LISTEN);
        assert_eq!(settings.fsync(), FsyncPolicy::Always);
        assert_eq!(settings.max_body_bytes(), 8 * 1024 * 1024);
        assert_eq!(settings.segment_bytes(), DEFAULT_SEGMENT_BYTES);
    }

    #[test]
    fn flags_override_the_file_and_the_file_overrides_defaults() {
        let config = file("listen = \"0.0.0.0:9000\"\nfsync = 250\nsegment_bytes = 8192\n");
        let settings = ServeArgs {
            listen: Some("127.0.0.1:7000".into()),
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert_eq!(settings.listen().to_string(), "127.0.0.1:7000");
        assert_eq!(settings.fsync(), FsyncPolicy::IntervalMs(250));
        assert_eq!(settings.segment_bytes(), 8192);
    }

    #[test]
    fn errors_name_the_setting_and_the_value() {
        let error = RawSettings {
            fsync: Some("sometimes".into()),
            ..RawSettings::default()
        }
        .freeze()
        .expect_err("invalid");
        let text = error.to_string();
        assert!(
            text.contains("fsync") && text.contains("sometimes"),
            "{text}"
        );
        let error = RawSettings {
            segment_bytes: Some((MIN_SEGMENT_BYTES - 1).to_string()),
            ..RawSettings::default()
        }
        .freeze()
        .expect_err("too small");
        assert!(error.to_string().contains("segment_bytes"), "{error}");
    }

    #[test]
    fn body_limit_is_checked_on_both_sides() {
        let with = |bytes: usize| {
            RawSettings {
                max_body_bytes: Some(bytes.to_string()),
                ..RawSettings::default()
            }
            .freeze()
        };
        assert!(with(MIN_MAX_BODY_BYTES - 1).is_err());
        assert!(with(MIN_MAX_BODY_BYTES).is_ok());
        assert!(with(MAX_FRAME_BYTES).is_ok());
        assert!(with(MAX_FRAME_BYTES + 1).is_err());
    }

    #[test]
    fn edge_defaults_pass_validation_unchanged() {
        let settings = RawSettings::default().freeze().expect("defaults are valid");
        assert_eq!(settings.edge(), &EdgeSettings::default());
        assert!(!settings.auth().enabled());
    }

    fn edge(raw: EdgeRaw) -> Result<Settings, ConfigError> {
        RawSettings {
            edge: raw,
            ..RawSettings::default()
        }
        .freeze()
    }

    #[test]
    fn a_short_hs256_secret_fails_with_a_clear_message() {
        let error = edge(EdgeRaw {
            auth_hs256_secret: Some("x".repeat(MIN_HS256_SECRET_BYTES - 1)),
            ..EdgeRaw::default()
        })
        .expect_err("too short");
        let text = error.to_string();
        assert!(text.contains("at least 32 bytes"), "{text}");
        assert!(!text.contains(&"x".repeat(8)), "the secret leaks: {text}");
        let settings = edge(EdgeRaw {
            auth_hs256_secret: Some("x".repeat(MIN_HS256_SECRET_BYTES)),
            ..EdgeRaw::default()
        })
        .expect("32 bytes are enough");
        assert!(settings.auth().enabled());
    }

    #[test]
    fn no_keys_on_a_network_address_refuses_to_start_unless_anonymous_is_allowed() {
        let public = |allow_anonymous| {
            RawSettings {
                listen: Some("0.0.0.0:8080".into()),
                allow_anonymous,
                ..RawSettings::default()
            }
            .freeze()
        };
        let error = public(false).expect_err("refused");
        assert!(error.to_string().contains("--allow-anonymous"), "{error}");
        assert!(public(true).is_ok());
        let with_key = RawSettings {
            listen: Some("0.0.0.0:8080".into()),
            edge: EdgeRaw {
                auth_hs256_secret: Some("k".repeat(40)),
                ..EdgeRaw::default()
            },
            ..RawSettings::default()
        };
        assert!(with_key.freeze().is_ok());
    }

    #[test]
    fn edge_limits_are_checked_on_both_sides() {
        let with = |raw: EdgeRaw| edge(raw).map(|s| s.edge().clone());
        let headers = |n: usize| EdgeRaw {
            max_headers: Some(n.to_string()),
            ..EdgeRaw::default()
        };
        assert!(with(headers(7)).is_err());
        assert!(with(headers(8)).is_ok());
        assert!(with(headers(1024)).is_ok());
        assert!(with(headers(1025)).is_err());
        let header_bytes = |n: usize| EdgeRaw {
            max_header_bytes: Some(n.to_string()),
            ..EdgeRaw::default()
        };
        assert!(with(header_bytes(MIN_MAX_HEADER_BYTES - 1)).is_err());
        assert!(with(header_bytes(MIN_MAX_HEADER_BYTES)).is_ok());
        let timeout = |ms: u64| EdgeRaw {
            header_read_timeout_ms: Some(ms.to_string()),
            ..EdgeRaw::default()
        };
        assert!(with(timeout(99)).is_err());
        assert!(with(timeout(100)).is_ok());
        let per_principal = |n: usize| EdgeRaw {
            max_long_polls: Some("10".into()),
            max_long_polls_per_principal: Some(n.to_string()),
            ..EdgeRaw::default()
        };
        assert!(with(per_principal(10)).is_ok());
        assert!(with(per_principal(11)).is_err(), "a share above the whole");
        let error = with(EdgeRaw {
            trusted_proxies: Some("10.0.0.0/8, bogus".into()),
            ..EdgeRaw::default()
        })
        .expect_err("bogus");
        assert!(error.to_string().contains("trusted_proxies"), "{error}");
    }

    #[test]
    fn edge_keys_come_from_the_file_and_flags_override_them() {
        let config =
            file("max_headers = 20\nprincipal_requests_per_second = 5\ndocs_public = true\n");
        let settings = ServeArgs {
            config: Some(config.path().to_owned()),
            edge: EdgeArgs {
                max_headers: Some("30".into()),
                ..EdgeArgs::default()
            },
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert_eq!(settings.edge().max_headers, 30);
        assert_eq!(settings.edge().principal_requests_per_second, 5);
        assert!(settings.edge().docs_public);
    }

    #[test]
    fn unknown_file_keys_are_refused() {
        let config = file("lisen = \"x\"\n");
        let error = ServeArgs {
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect_err("typo");
        assert!(error.to_string().contains("lisen"), "{error}");
    }
}
