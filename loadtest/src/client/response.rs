//! Reading one HTTP/1.1 reply off a socket: the head parsed with `httparse`, then the body
//! framed as RFC 9112 §6.3 says (no body for 1xx, 204 and 304; `transfer-encoding: chunked`;
//! `content-length`; else until the server closes), and whether the connection may carry
//! another request. Interim 1xx replies are skipped. Every length read off the wire is checked
//! against a bound before it is used.

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::Reply;
use super::chunked::{ChunkedDecoder, ChunkedError};

/// Most header fields a reply may carry: Wharf's carry fewer than 10.
const MAX_HEADERS: usize = 64;
/// Longest reply head (status line and fields): Wharf's are a few hundred bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest reply body: a receive of 1,000 1 KiB messages is about 1.4 MB; far past that is a
/// broken server, not a reply.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most room made at once for a body of known length: a receive of 100 1 KiB messages (about
/// 140 KB) in one read; a larger body grows as it comes in, not as its `content-length` says.
const BODY_READ_SPACE_BYTES: usize = 256 * 1024;
/// Spare room made in the read buffer before each read: one read takes a whole small reply.
const READ_SPACE_BYTES: usize = 16 * 1024;

/// Why no reply could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The socket failed, or closed before the reply was complete.
    #[error("connection closed or failed mid-reply")]
    Transport,
    /// The reply is not HTTP/1.1 this client reads, or passes one of its bounds.
    #[error("malformed reply: {0}")]
    Malformed(&'static str),
}

impl From<ChunkedError> for ReadError {
    fn from(_: ChunkedError) -> ReadError {
        ReadError::Malformed("bad chunked body")
    }
}

/// A reply read whole, and whether its connection may carry the next request.
#[derive(Debug)]
pub struct ReadReply {
    /// The reply.
    pub reply: Reply,
    /// False after `connection: close`, an HTTP/1.0 reply without keep-alive, or a body
    /// delimited by the server closing.
    pub keep_alive: bool,
}

/// How the body after a head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

/// The parts of a head the body and the connection depend on.
#[derive(Debug)]
struct Head {
    status: StatusCode,
    headers: HeaderMap,
    framing: Framing,
    keep_alive: bool,
}

/// Reads the next reply from `io`; `buffer` holds bytes already read and keeps any that
/// follow the reply.
pub async fn read_reply<R: AsyncRead + Unpin>(
    io: &mut R,
    buffer: &mut BytesMut,
) -> Result<ReadReply, ReadError> {
    let head = loop {
        let head = read_head(io, buffer).await?;
        if !head.status.is_informational() || head.status == StatusCode::SWITCHING_PROTOCOLS {
            break head;
        }
    };
    let body = match head.framing {
        Framing::Empty => Bytes::new(),
        Framing::Length(length) => read_exactly(io, buffer, length).await?,
        Framing::Chunked => read_chunked(io, buffer).await?,
        Framing::UntilClose => read_until_close(io, buffer).await?,
    };
    Ok(ReadReply {
        keep_alive: head.keep_alive && head.framing != Framing::UntilClose,
        reply: Reply {
            status: head.status,
            headers: head.headers,
            body,
        },
    })
}

/// Reads until `buffer` starts with a whole head, then parses and consumes it.
async fn read_head<R: AsyncRead + Unpin>(
    io: &mut R,
    buffer: &mut BytesMut,
) -> Result<Head, ReadError> {
    loop {
        if let Some((length, head)) = parse_head(buffer)? {
            buffer.advance(length);
            return Ok(head);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(ReadError::Malformed("reply head too long"));
        }
        fill(io, buffer).await?;
    }
}

/// The head at the start of `bytes` and its length, or `None` while it is incomplete.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, ReadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut fields);
    let length = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::Malformed("too many header fields"));
        }
        Err(_) => return Err(ReadError::Malformed("bad reply head")),
    };
    let code = parsed.code.ok_or(ReadError::Malformed("no status"))?;
    let status = StatusCode::from_u16(code).map_err(|_| ReadError::Malformed("bad status"))?;
    let mut headers = HeaderMap::with_capacity(parsed.headers.len());
    for field in parsed.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| ReadError::Malformed("bad header name"))?;
        let value = HeaderValue::from_bytes(field.value)
            .map_err(|_| ReadError::Malformed("bad header value"))?;
        headers.append(name, value);
    }
    let http_1_0 = parsed.version == Some(0);
    let head = Head {
        framing: framing(status, &headers)?,
        keep_alive: keep_alive(http_1_0, &headers),
        status,
        headers,
    };
    Ok(Some((length, head)))
}

/// How the body is delimited (RFC 9112 §6.3): chunked wins over a length; a length must be
/// one number, however often it is repeated.
fn framing(status: StatusCode, headers: &HeaderMap) -> Result<Framing, ReadError> {
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::Empty);
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        let last_coding = headers
            .get_all(TRANSFER_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .rfind(|coding| !coding.is_empty());
        return match last_coding {
            Some(coding) if coding.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Ok(Framing::UntilClose),
        };
    }
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let part = std::str::from_utf8(part)
                .ok()
                .map(str::trim)
                .filter(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|part| part.parse::<usize>().ok())
                .ok_or(ReadError::Malformed("bad content-length"))?;
            if length.is_some_and(|length| length != part) {
                return Err(ReadError::Malformed("conflicting content-length"));
            }
            length = Some(part);
        }
    }
    match length {
        Some(length) if length > MAX_BODY_BYTES => Err(ReadError::Malformed("body too large")),
        Some(0) => Ok(Framing::Empty),
        Some(length) => Ok(Framing::Length(length)),
        None => Ok(Framing::UntilClose),
    }
}

/// Whether the connection stays open after this reply: HTTP/1.1 unless `connection: close`,
/// HTTP/1.0 only with `connection: keep-alive`.
fn keep_alive(http_1_0: bool, headers: &HeaderMap) -> bool {
    let has = |token: &str| {
        headers
            .get_all(CONNECTION)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .any(|option| option.trim().eq_ignore_ascii_case(token))
    };
    if http_1_0 {
        has("keep-alive")
    } else {
        !has("close")
    }
}

/// The next `length` bytes, read as needed.
async fn read_exactly<R: AsyncRead + Unpin>(
    io: &mut R,
    buffer: &mut BytesMut,
    length: usize,
) -> Result<Bytes, ReadError> {
    while buffer.len() < length {
        buffer.reserve((length - buffer.len()).min(BODY_READ_SPACE_BYTES));
        fill(io, buffer).await?;
    }
    Ok(buffer.split_to(length).freeze())
}

async fn read_chunked<R: AsyncRead + Unpin>(
    io: &mut R,
    buffer: &mut BytesMut,
) -> Result<Bytes, ReadError> {
    let mut decoder = ChunkedDecoder::new(MAX_BODY_BYTES);
    let mut body = Vec::new();
    while !decoder.decode(buffer, &mut body)? {
        fill(io, buffer).await?;
    }
    Ok(Bytes::from(body))
}

async fn read_until_close<R: AsyncRead + Unpin>(
    io: &mut R,
    buffer: &mut BytesMut,
) -> Result<Bytes, ReadError> {
    loop {
        if buffer.len() > MAX_BODY_BYTES {
            return Err(ReadError::Malformed("body too large"));
        }
        buffer.reserve(READ_SPACE_BYTES);
        match io.read_buf(buffer).await {
            Ok(0) => return Ok(buffer.split().freeze()),
            Ok(_) => {}
            Err(_) => return Err(ReadError::Transport),
        }
    }
}

/// Reads more bytes into `buffer`; the server closing is an error here (the reply is not
/// complete).
async fn fill<R: AsyncRead + Unpin>(io: &mut R, buffer: &mut BytesMut) -> Result<(), ReadError> {
    buffer.reserve(READ_SPACE_BYTES);
    match io.read_buf(buffer).await {
        Ok(0) | Err(_) => Err(ReadError::Transport),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one reply from `wire` and returns it with the bytes left after it.
    async fn read_from(wire: &[u8]) -> (Result<ReadReply, ReadError>, Vec<u8>) {
        let mut io = wire;
        let mut buffer = BytesMut::new();
        let read = read_reply(&mut io, &mut buffer).await;
        let mut left = buffer.to_vec();
        left.extend_from_slice(io);
        (read, left)
    }

    #[tokio::test]
    async fn a_content_length_body_is_read_and_the_next_reply_left() {
        let wire = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-a: b\r\n\r\nokHTTP/1.1 204";
        let (read, left) = read_from(wire).await;
        let read = read.expect("reads");
        assert_eq!(read.reply.status, StatusCode::OK);
        assert_eq!(&read.reply.body[..], b"ok");
        assert_eq!(read.reply.headers["x-a"], "b");
        assert!(read.keep_alive);
        assert_eq!(left, b"HTTP/1.1 204");
    }

    #[tokio::test]
    async fn a_chunked_body_is_decoded() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let (read, left) = read_from(wire).await;
        let read = read.expect("reads");
        assert_eq!(&read.reply.body[..], b"abcde");
        assert!(read.keep_alive);
        assert!(left.is_empty());
    }

    #[tokio::test]
    async fn chunked_wins_over_a_content_length() {
        let wire =
            b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\ntransfer-encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n";
        let read = read_from(wire).await.0.expect("reads");
        assert_eq!(&read.reply.body[..], b"x");
    }

    #[tokio::test]
    async fn connection_close_ends_keep_alive() {
        let wire = b"HTTP/1.1 503 Service Unavailable\r\nConnection: Close\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n";
        let read = read_from(wire).await.0.expect("reads");
        assert_eq!(read.reply.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(read.reply.has_retry_after());
        assert!(!read.keep_alive);
    }

    #[tokio::test]
    async fn http_1_0_keeps_alive_only_when_asked() {
        let plain = read_from(b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n").await;
        assert!(!plain.0.expect("reads").keep_alive);
        let asked =
            read_from(b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n")
                .await;
        assert!(asked.0.expect("reads").keep_alive);
    }

    #[tokio::test]
    async fn a_body_without_length_runs_to_the_close() {
        let read = read_from(b"HTTP/1.1 200 OK\r\n\r\nall of it")
            .await
            .0
            .expect("reads");
        assert_eq!(&read.reply.body[..], b"all of it");
        assert!(!read.keep_alive);
    }

    #[tokio::test]
    async fn interim_replies_are_skipped_and_no_content_has_no_body() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\nnext";
        let (read, left) = read_from(wire).await;
        let read = read.expect("reads");
        assert_eq!(read.reply.status, StatusCode::NO_CONTENT);
        assert!(read.reply.body.is_empty());
        assert_eq!(left, b"next");
    }

    #[tokio::test]
    async fn a_close_before_the_body_ends_is_a_transport_error() {
        let read = read_from(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort")
            .await
            .0;
        assert_eq!(read.err(), Some(ReadError::Transport));
        let read = read_from(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab")
            .await
            .0;
        assert_eq!(read.err(), Some(ReadError::Transport));
        let read = read_from(b"").await.0;
        assert_eq!(read.err(), Some(ReadError::Transport));
    }

    #[tokio::test]
    async fn conflicting_or_bad_lengths_are_malformed() {
        for wire in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n",
        ] {
            let read = read_from(wire).await.0;
            assert!(matches!(read, Err(ReadError::Malformed(_))), "{read:?}");
        }
        let same_twice = read_from(b"HTTP/1.1 200 OK\r\ncontent-length: 1, 1\r\n\r\nz")
            .await
            .0;
        assert_eq!(&same_twice.expect("reads").reply.body[..], b"z");
    }

    #[tokio::test]
    async fn a_length_up_to_the_bound_is_taken_and_one_past_it_refused() {
        let at_bound = format!("HTTP/1.1 200 OK\r\ncontent-length: {MAX_BODY_BYTES}\r\n\r\n");
        let read_at = read_from(at_bound.as_bytes()).await.0;
        assert_eq!(
            read_at.err(),
            Some(ReadError::Transport),
            "taken, then cut short"
        );
        let past = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
            MAX_BODY_BYTES + 1
        );
        let read_past = read_from(past.as_bytes()).await.0;
        assert_eq!(
            read_past.err(),
            Some(ReadError::Malformed("body too large"))
        );
    }

    #[tokio::test]
    async fn a_head_past_its_bound_is_refused() {
        let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
        while wire.len() <= MAX_HEAD_BYTES {
            wire.extend_from_slice(b"x-pad: 0123456789012345678901234567890123456789");
        }
        let read = read_from(&wire).await.0;
        assert_eq!(
            read.err(),
            Some(ReadError::Malformed("reply head too long"))
        );
    }
}
