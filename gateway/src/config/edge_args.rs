//! The edge's settings declared once: their flags and `WHARF_*` env vars ([`EdgeArgs`]), their
//! file keys, and their text before validation ([`EdgeRaw`]).

use super::file::value_text;

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
        pub(super) const EDGE_KEYS: &[&str] = &[$(stringify!($field)),*];

        impl EdgeArgs {
            /// These flags over the edge keys of a config file (taken out of `file`).
            pub(super) fn merge(self, file: &mut toml::Table) -> EdgeRaw {
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
    /// Host names an anonymous server answers to besides IP addresses and localhost:
    /// comma-separated [default: none].
    allowed_hosts => "WHARF_ALLOWED_HOSTS",
    /// Origins of web pages whose browser requests are accepted besides the server's own:
    /// comma-separated, e.g. `https://app.example:3000` [default: none].
    allowed_origins => "WHARF_ALLOWED_ORIGINS",
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
