//! Writing one HTTP/1.1 request: the head and body laid out in one reusable buffer, so a
//! request costs one `write` and, once the buffer has grown, no allocation.

use std::io::Write;

/// Why a request could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("path {0:?} is not an origin-form request target")]
pub struct BadPath(&'static str);

/// Lays out `method path` with `host`, a JSON content type and the body's length (when there
/// is a body or the method is `POST`), then the body, in `out` (cleared first).
pub fn encode(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    authority: &str,
    body: &[u8],
) -> Result<(), BadPath> {
    check_path(path)?;
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\ncontent-type: application/json\r\n");
    if !body.is_empty() || method == "POST" {
        // Writing to a Vec cannot fail.
        let _infallible = write!(out, "content-length: {}\r\n", body.len());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

/// A path this client sends as it is: starts with `/`, no spaces or control bytes (which
/// would split the request line or the head).
fn check_path(path: &str) -> Result<(), BadPath> {
    if !path.starts_with('/') {
        return Err(BadPath("does not start with /"));
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(BadPath("holds a space or a control byte"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_carries_its_length_and_body() {
        let mut out = Vec::new();
        encode(&mut out, "POST", "/v1/topics", "127.0.0.1:8080", b"{}").expect("encodes");
        let expected = "POST /v1/topics HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(String::from_utf8_lossy(&out), expected);
    }

    #[test]
    fn a_get_without_body_has_no_length_and_the_buffer_is_reused() {
        let mut out = b"left over".to_vec();
        encode(&mut out, "GET", "/metrics", "h:1", b"").expect("encodes");
        let expected =
            "GET /metrics HTTP/1.1\r\nhost: h:1\r\ncontent-type: application/json\r\n\r\n";
        assert_eq!(String::from_utf8_lossy(&out), expected);
    }

    #[test]
    fn paths_that_would_break_the_request_line_are_refused() {
        let mut out = Vec::new();
        for path in ["v1", "/a b", "/a\r\nx: y", ""] {
            assert!(
                encode(&mut out, "GET", path, "h:1", b"").is_err(),
                "{path:?}"
            );
        }
    }
}
