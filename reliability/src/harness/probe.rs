//! A blocking `GET /readyz` over a plain TCP socket, so the cluster runner needs no async
//! runtime.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Longest a single probe may take: connect, send and read the status line. A node that
/// answers slower than this is not ready for a test's traffic anyway.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Most bytes of a reply read to find its status line.
const STATUS_LINE_MAX: usize = 256;

/// The HTTP status of `GET /readyz` at `addr`, or why there was none.
pub fn readyz_status(addr: SocketAddr) -> Result<u16, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(PROBE_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(PROBE_TIMEOUT)))
        .map_err(|e| format!("socket timeouts: {e}"))?;
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut reply = [0_u8; STATUS_LINE_MAX];
    let mut read = 0;
    while read < reply.len() && !reply[..read].contains(&b'\n') {
        match stream.read(&mut reply[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    parse_status(&reply[..read])
}

/// The status code of an HTTP/1.x status line.
fn parse_status(reply: &[u8]) -> Result<u16, String> {
    let text = String::from_utf8_lossy(reply);
    let line = text.lines().next().unwrap_or_default();
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP status line: {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_gives_its_code() {
        assert_eq!(
            parse_status(b"HTTP/1.1 503 Service Unavailable\r\n"),
            Ok(503)
        );
        assert!(parse_status(b"garbage").is_err());
        assert!(parse_status(b"").is_err());
    }

    #[test]
    fn a_closed_port_is_an_error_not_a_hang() {
        let addr = super::super::ports::free_loopback_addrs(1).expect("port")[0];
        assert!(readyz_status(addr).is_err());
    }
}
