//! [`EdgeSettings`]: the edge's limits, timeouts and switches, their defaults, and their
//! validation together with the loading of the verification keys.

use std::path::Path;
use std::time::Duration;

use super::edge_args::EdgeRaw;
use super::error::{ConfigError, invalid};
use super::values::{boolean, ranged};
use crate::auth::{Authenticator, DEFAULT_KID, KeySet, KeySpec, keys};
use crate::http::browser_guard;
use crate::http::client_addr::IpRange;
use crate::limits::*;

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
    /// Host names an anonymous server answers to besides IP literals and `localhost`
    /// (normalized by [`browser_guard::parse_host`]).
    pub allowed_hosts: Vec<String>,
    /// Whether an anonymous server checks `Host`: listening on loopback, or `allowed_hosts`
    /// given (set by [`crate::config::RawSettings::freeze`], which knows the address).
    pub check_host: bool,
    /// Origins whose browser requests are accepted besides the server's own (normalized by
    /// [`browser_guard::parse_origin`]).
    pub allowed_origins: Vec<String>,
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
            allowed_hosts: Vec::new(),
            check_host: true,
            allowed_origins: Vec::new(),
            expose_docs: true,
            docs_public: false,
            metrics_public: false,
        }
    }
}

/// Longest `*_timeout_ms` setting accepted: one hour.
const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// Validates the edge settings and loads the keys.
pub(super) fn freeze_edge(
    raw: EdgeRaw,
    file_keys: Vec<KeySpec>,
) -> Result<(Authenticator, EdgeSettings), ConfigError> {
    let mut raw = raw;
    let auth = freeze_auth(&mut raw, &file_keys)?;
    let (max_long_polls, max_streams) = waiting_caps(&mut raw)?;
    let ms = |setting, text, default| {
        ranged(setting, text, default, 100..=MAX_TIMEOUT_MS).map(Duration::from_millis)
    };
    let trusted_proxies = trusted_proxies(raw.trusted_proxies)?;
    let allowed_hosts = list(
        "allowed_hosts",
        raw.allowed_hosts,
        browser_guard::parse_host,
    )?;
    let allowed_origins = list(
        "allowed_origins",
        raw.allowed_origins,
        browser_guard::parse_origin,
    )?;
    let keepalive = ranged(
        "tcp_keepalive_secs",
        raw.tcp_keepalive_secs,
        DEFAULT_TCP_KEEPALIVE_SECS,
        0..=7200,
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
        max_long_polls,
        max_streams,
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
        check_host: true,
        allowed_hosts,
        allowed_origins,
        expose_docs: boolean("expose_docs", raw.expose_docs, true)?,
        docs_public: boolean("docs_public", raw.docs_public, false)?,
        metrics_public: boolean("metrics_public", raw.metrics_public, false)?,
    };
    Ok((auth, edge))
}

/// The token keys (the HS256 secret, the key files, a JWKS file) and the checks on their
/// claims, taken out of `raw`.
fn freeze_auth(raw: &mut EdgeRaw, file_keys: &[KeySpec]) -> Result<Authenticator, ConfigError> {
    let mut keys = KeySet::default();
    if let Some(secret) = raw.auth_hs256_secret.take().filter(|s| !s.is_empty()) {
        keys.insert(DEFAULT_KID, keys::hs256(DEFAULT_KID, secret.as_bytes())?)?;
    }
    for spec in file_keys {
        keys.insert(&spec.kid, spec.load()?)?;
    }
    if let Some(path) = raw.auth_jwks_file.take().filter(|s| !s.is_empty()) {
        keys.insert_jwks(Path::new(&path))?;
    }
    let leeway = ranged(
        "auth_leeway_secs",
        raw.auth_leeway_secs.take(),
        DEFAULT_AUTH_LEEWAY_SECS,
        0..=300,
    )?;
    let non_empty = |text: Option<String>| text.filter(|t| !t.trim().is_empty());
    Ok(Authenticator::new(
        keys,
        non_empty(raw.auth_issuer.take()),
        non_empty(raw.auth_audience.take()),
        leeway,
    ))
}

/// The caps on long-polls and on streams, each as (in all, per principal), taken out of
/// `raw`: a principal's share defaults to at most the whole.
type Caps = ((usize, usize), (usize, usize));

/// Reads [`Caps`] from `raw`.
fn waiting_caps(raw: &mut EdgeRaw) -> Result<Caps, ConfigError> {
    let long_polls = ranged(
        "max_long_polls",
        raw.max_long_polls.take(),
        DEFAULT_MAX_LONG_POLLS,
        1..=1_000_000,
    )?;
    let streams = ranged(
        "max_streams",
        raw.max_streams.take(),
        DEFAULT_MAX_STREAMS,
        1..=1_000_000,
    )?;
    let long_polls_each = ranged(
        "max_long_polls_per_principal",
        raw.max_long_polls_per_principal.take(),
        DEFAULT_MAX_LONG_POLLS_PER_PRINCIPAL.min(long_polls),
        1..=long_polls,
    )?;
    let streams_each = ranged(
        "max_streams_per_principal",
        raw.max_streams_per_principal.take(),
        DEFAULT_MAX_STREAMS_PER_PRINCIPAL.min(streams),
        1..=streams,
    )?;
    Ok(((long_polls, long_polls_each), (streams, streams_each)))
}

/// `trusted_proxies`: comma-separated addresses or CIDR ranges.
fn trusted_proxies(text: Option<String>) -> Result<Vec<IpRange>, ConfigError> {
    text.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry
                .parse()
                .map_err(|reason: String| invalid("trusted_proxies", entry, reason))
        })
        .collect()
}

/// A comma-separated list setting, each entry parsed by `parse` (empty entries skipped).
fn list(
    setting: &'static str,
    text: Option<String>,
    parse: fn(&str) -> Result<String, String>,
) -> Result<Vec<String>, ConfigError> {
    text.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| parse(entry).map_err(|reason| invalid(setting, entry, reason)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RawSettings, Settings};

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
}
