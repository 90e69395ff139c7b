//! The request head's limits, checked as hyper hands a request over (before any layer adds
//! a header), so an oversized head gets a problem (431 `headers_too_large`) like every other
//! refusal. Hyper's own limits sit
//! [`HEAD_SLACK_BYTES`] above the configured head size and at [`hyper_max_headers`]: a head past
//! those is cut by the HTTP layer itself with a bare 431 and the connection closed, since it
//! never becomes a request to answer.

use axum::http::Request;

use crate::config::EdgeSettings;
use crate::http::problem::ApiError;

/// Bytes of head hyper still parses past `max_header_bytes`, so a head a little over the
/// limit reaches the edge and gets a problem body. The connection's read buffer has this
/// much room beyond the limit anyway (`accept::MIN_CONNECTION_BUFFER_BYTES`).
pub(crate) const HEAD_SLACK_BYTES: usize = 16 * 1024;
/// Headers hyper parses into arrays on the stack: asked to take more, it allocates both
/// arrays on the heap for every request (4 KiB each at 128), which cost a produce-1 about 4 %
/// of its requests per second. Its own default (hyper's `DEFAULT_MAX_HEADERS`).
pub(crate) const HYPER_INLINE_HEADERS: usize = 100;

/// The headers hyper parses: at least [`HYPER_INLINE_HEADERS`], so a request a little over
/// `max_headers` (36 over the default 64) reaches [`check`] and gets a problem, at no cost;
/// a `max_headers` above it is hyper's limit too (past it, hyper's bare 431).
pub(crate) fn hyper_max_headers(max_headers: usize) -> usize {
    max_headers.max(HYPER_INLINE_HEADERS)
}

/// Bytes of a request line's fixed parts: two spaces, `HTTP/1.1` and the line's CRLF.
const REQUEST_LINE_FIXED_BYTES: usize = 2 + 8 + 2;
/// Bytes each header line adds beyond its name and value: `: ` and CRLF.
const HEADER_LINE_FIXED_BYTES: usize = 4;
/// The blank line that ends the head.
const HEAD_END_BYTES: usize = 2;

/// The size of `request`'s head as a client sends it in HTTP/1.1 without optional
/// whitespace: the request line, each header line and the blank line.
pub(crate) fn head_bytes<B>(request: &Request<B>) -> usize {
    let target = request
        .uri()
        .path_and_query()
        .map_or(1, |target| target.as_str().len());
    let line = request.method().as_str().len() + target + REQUEST_LINE_FIXED_BYTES;
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + HEADER_LINE_FIXED_BYTES)
        .sum();
    line + headers + HEAD_END_BYTES
}

/// A connection's limits on request heads (`max_headers`, `max_header_bytes`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadLimits {
    /// Headers per request.
    pub max_headers: usize,
    /// Bytes of the request line and headers together.
    pub max_header_bytes: usize,
}

impl From<&EdgeSettings> for HeadLimits {
    fn from(settings: &EdgeSettings) -> Self {
        HeadLimits {
            max_headers: settings.max_headers,
            max_header_bytes: settings.max_header_bytes,
        }
    }
}

/// Refuses a head with more than `max_headers` headers or over `max_header_bytes`.
pub(crate) fn check<B>(request: &Request<B>, settings: HeadLimits) -> Result<(), ApiError> {
    let count = request.headers().len();
    if count > settings.max_headers {
        return Err(ApiError::HeadersTooLarge {
            detail: format!(
                "the request has {count} headers; this server takes at most {} (max_headers)",
                settings.max_headers
            ),
        });
    }
    let bytes = head_bytes(request);
    if bytes > settings.max_header_bytes {
        return Err(ApiError::HeadersTooLarge {
            detail: format!(
                "the request line and headers are {bytes} bytes; this server takes at most {} \
                 (max_header_bytes)",
                settings.max_header_bytes
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(raw_target: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut builder = axum::http::Request::builder().method("GET").uri(raw_target);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).expect("request")
    }

    #[test]
    fn the_head_is_counted_as_sent() {
        let head = parts("/healthz?x=1", &[("host", "localhost"), ("x-a", "vv")]);
        let sent = "GET /healthz?x=1 HTTP/1.1\r\nhost: localhost\r\nx-a: vv\r\n\r\n";
        assert_eq!(head_bytes(&head), sent.len());
    }

    #[test]
    fn a_head_over_either_limit_is_refused_and_one_at_them_is_not() {
        let settings = HeadLimits {
            max_headers: 2,
            max_header_bytes: 64,
        };
        let two = parts("/a", &[("a", "1"), ("b", "2")]);
        assert!(check(&two, settings).is_ok());
        let three = parts("/a", &[("a", "1"), ("b", "2"), ("c", "3")]);
        let refused = check(&three, settings).expect_err("three headers");
        assert!(refused.to_string().contains("max_headers"), "{refused}");
        let padding = "x".repeat(64 - head_bytes(&parts("/", &[])));
        let at_limit = parts(&format!("/{padding}"), &[]);
        assert_eq!(head_bytes(&at_limit), 64);
        assert!(check(&at_limit, settings).is_ok());
        let over = check(&parts(&format!("/{padding}x"), &[]), settings).expect_err("65 bytes");
        assert!(over.to_string().contains("max_header_bytes"), "{over}");
        assert_eq!(
            over.status_and_code().0,
            axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        );
    }
}
