//! The `transfer-encoding: chunked` body decoder (RFC 9112 §7.1): fed the bytes read so far,
//! it moves chunk data into the body and consumes the framing, chunk extensions and trailers,
//! until the last chunk's empty line. Every length it reads is checked against a bound before
//! it is used.

use bytes::{Buf, BytesMut};

/// Longest chunk-size line accepted (hex size, extensions, CRLF): a size needs at most 16 hex
/// digits, so a longer line is extensions nobody here sends, or garbage.
const MAX_SIZE_LINE_BYTES: usize = 1024;
/// Longest trailer section accepted: Wharf sends none; a few fields fit in far less.
const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Why a chunked body could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChunkedError {
    /// A chunk-size line that is not a hexadecimal number, or one that overflows.
    #[error("bad chunk size")]
    BadSize,
    /// A chunk-size line longer than its bound.
    #[error("chunk-size line too long")]
    SizeLineTooLong,
    /// Chunk data not followed by CRLF.
    #[error("chunk data not followed by CRLF")]
    MissingCrlf,
    /// Trailers longer than their bound.
    #[error("trailer section too long")]
    TrailersTooLong,
    /// The body would pass the largest body accepted.
    #[error("chunked body larger than {max} bytes")]
    TooLarge {
        /// The bound.
        max: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size,
    Data { left: usize },
    DataEnd,
    Trailers { seen: usize },
    Done,
}

/// Decodes one chunked body, a piece at a time.
#[derive(Debug)]
pub struct ChunkedDecoder {
    state: State,
    max_body: usize,
}

impl ChunkedDecoder {
    /// A decoder for a body of at most `max_body` bytes.
    pub fn new(max_body: usize) -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size,
            max_body,
        }
    }

    /// Decodes what it can from the front of `input`, appending chunk data to `body` and
    /// removing what it consumed; true once the whole body (trailers included) is read, with
    /// whatever follows it left in `input`.
    pub fn decode(
        &mut self,
        input: &mut BytesMut,
        body: &mut Vec<u8>,
    ) -> Result<bool, ChunkedError> {
        loop {
            let progressed = match self.state {
                State::Size => self.size_line(input, body.len())?,
                State::Data { left } => {
                    let taken = left.min(input.len());
                    body.extend_from_slice(&input[..taken]);
                    input.advance(taken);
                    self.state = match left - taken {
                        0 => State::DataEnd,
                        left => State::Data { left },
                    };
                    taken > 0
                }
                State::DataEnd => self.data_end(input)?,
                State::Trailers { seen } => self.trailer_line(input, seen)?,
                State::Done => return Ok(true),
            };
            if !progressed {
                return Ok(false);
            }
        }
    }

    fn size_line(&mut self, input: &mut BytesMut, body_len: usize) -> Result<bool, ChunkedError> {
        let Some(line) = take_line(input, MAX_SIZE_LINE_BYTES, ChunkedError::SizeLineTooLong)?
        else {
            return Ok(false);
        };
        let size = parse_size(&line)?;
        self.state = if size == 0 {
            State::Trailers { seen: 0 }
        } else if size > self.max_body.saturating_sub(body_len) {
            return Err(ChunkedError::TooLarge { max: self.max_body });
        } else {
            State::Data { left: size }
        };
        Ok(true)
    }

    fn data_end(&mut self, input: &mut BytesMut) -> Result<bool, ChunkedError> {
        let end = if input.starts_with(b"\r\n") {
            2
        } else if input.starts_with(b"\n") {
            1
        } else if input.is_empty() || input[..] == b"\r"[..] {
            return Ok(false);
        } else {
            return Err(ChunkedError::MissingCrlf);
        };
        input.advance(end);
        self.state = State::Size;
        Ok(true)
    }

    fn trailer_line(&mut self, input: &mut BytesMut, seen: usize) -> Result<bool, ChunkedError> {
        let room = MAX_TRAILER_BYTES - seen;
        let Some(line) = take_line(input, room, ChunkedError::TrailersTooLong)? else {
            return Ok(false);
        };
        self.state = if line.is_empty() {
            State::Done
        } else {
            State::Trailers {
                seen: seen + line.len() + 2,
            }
        };
        Ok(true)
    }
}

/// The next line of `input` without its line end (CRLF, or a bare LF as RFC 9112 §2.2
/// allows), consumed; `None` while it is incomplete; `too_long` once it passes `max` bytes.
fn take_line(
    input: &mut BytesMut,
    max: usize,
    too_long: ChunkedError,
) -> Result<Option<BytesMut>, ChunkedError> {
    let Some(end) = input.iter().take(max + 1).position(|&b| b == b'\n') else {
        return if input.len() > max {
            Err(too_long)
        } else {
            Ok(None)
        };
    };
    let mut line = input.split_to(end + 1);
    line.truncate(end);
    if line.ends_with(b"\r") {
        line.truncate(end - 1);
    }
    Ok(Some(line))
}

/// The hexadecimal size at the start of a chunk-size line, before any `;extension`.
fn parse_size(line: &[u8]) -> Result<usize, ChunkedError> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    let rest = &line[digits..];
    let rest_ok = rest.is_empty() || matches!(rest[0], b';' | b' ' | b'\t');
    if digits == 0 || !rest_ok {
        return Err(ChunkedError::BadSize);
    }
    line[..digits].iter().try_fold(0usize, |size, &digit| {
        let value = char::from(digit)
            .to_digit(16)
            .ok_or(ChunkedError::BadSize)?;
        size.checked_mul(16)
            .and_then(|size| size.checked_add(value as usize))
            .ok_or(ChunkedError::BadSize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 20;

    /// Feeds `wire` to a decoder `step` bytes at a time; the body and the bytes after it.
    fn decode_in_steps(wire: &[u8], step: usize) -> Result<(Vec<u8>, Vec<u8>), ChunkedError> {
        let mut decoder = ChunkedDecoder::new(MAX);
        let mut input = BytesMut::new();
        let mut body = Vec::new();
        for (index, piece) in wire.chunks(step).enumerate() {
            input.extend_from_slice(piece);
            if decoder.decode(&mut input, &mut body)? {
                let fed = ((index + 1) * step).min(wire.len());
                let mut after = input.to_vec();
                after.extend_from_slice(&wire[fed..]);
                return Ok((body, after));
            }
        }
        panic!("the body never ended: {:?}", String::from_utf8_lossy(wire));
    }

    #[test]
    fn chunks_join_into_the_body_whatever_the_read_sizes() {
        let wire = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
        for step in 1..=wire.len() {
            let (body, left) = decode_in_steps(wire, step).expect("decodes");
            assert_eq!(body, b"hello, world", "step {step}");
            assert!(left.is_empty(), "step {step}");
        }
    }

    #[test]
    fn trailers_and_bare_line_feeds_are_consumed() {
        let wire = b"3\nabc\n0\r\nx-trailer: 1\r\nother: 2\n\r\n";
        let (body, left) = decode_in_steps(wire, wire.len()).expect("decodes");
        assert_eq!(body, b"abc");
        assert!(left.is_empty());
    }

    #[test]
    fn bytes_after_the_last_chunk_stay_in_the_input() {
        let mut input = BytesMut::from(&b"2\r\nok\r\n0\r\n\r\nHTTP/1.1 200"[..]);
        let mut body = Vec::new();
        let done = ChunkedDecoder::new(MAX).decode(&mut input, &mut body);
        assert_eq!(done, Ok(true));
        assert_eq!(body, b"ok");
        assert_eq!(&input[..], b"HTTP/1.1 200");
    }

    #[test]
    fn upper_case_hex_sizes_are_read() {
        let body: Vec<u8> = (0..0x1A).map(|_| b'z').collect();
        let mut wire = b"1A\r\n".to_vec();
        wire.extend_from_slice(&body);
        wire.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(decode_in_steps(&wire, 3).expect("decodes").0, body);
    }

    #[test]
    fn a_size_that_is_not_hex_is_refused() {
        let mut decoder = ChunkedDecoder::new(MAX);
        let mut input = BytesMut::from(&b"zz\r\n"[..]);
        let refused = decoder.decode(&mut input, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::BadSize));
        let mut empty = BytesMut::from(&b"\r\n"[..]);
        let refused = ChunkedDecoder::new(MAX).decode(&mut empty, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::BadSize));
    }

    #[test]
    fn a_size_that_overflows_is_refused() {
        let mut input = BytesMut::from(&b"1ffffffffffffffff\r\n"[..]);
        let refused = ChunkedDecoder::new(MAX).decode(&mut input, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::BadSize));
    }

    #[test]
    fn a_body_up_to_the_bound_is_read_and_one_byte_more_refused() {
        let mut at_bound = BytesMut::from(&b"4\r\nabcd\r\n0\r\n\r\n"[..]);
        let read = ChunkedDecoder::new(4).decode(&mut at_bound, &mut Vec::new());
        assert_eq!(read, Ok(true));
        let mut over = BytesMut::from(&b"3\r\nabc\r\n2\r\nde\r\n"[..]);
        let refused = ChunkedDecoder::new(4).decode(&mut over, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::TooLarge { max: 4 }));
    }

    #[test]
    fn data_not_followed_by_crlf_is_refused() {
        let mut input = BytesMut::from(&b"2\r\nokX\r\n"[..]);
        let refused = ChunkedDecoder::new(MAX).decode(&mut input, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::MissingCrlf));
    }

    #[test]
    fn a_size_line_past_its_bound_is_refused_and_one_within_it_waits() {
        let mut within = BytesMut::from(vec![b'0'; MAX_SIZE_LINE_BYTES].as_slice());
        let waits = ChunkedDecoder::new(MAX).decode(&mut within, &mut Vec::new());
        assert_eq!(waits, Ok(false));
        let mut over = BytesMut::from(vec![b'0'; MAX_SIZE_LINE_BYTES + 1].as_slice());
        let refused = ChunkedDecoder::new(MAX).decode(&mut over, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::SizeLineTooLong));
    }

    #[test]
    fn trailers_past_their_bound_are_refused() {
        let mut wire = b"0\r\n".to_vec();
        let field = b"x-pad: 0123456789012345678901234567890123456789\r\n";
        while wire.len() < MAX_TRAILER_BYTES + 100 {
            wire.extend_from_slice(field);
        }
        let mut input = BytesMut::from(wire.as_slice());
        let refused = ChunkedDecoder::new(MAX).decode(&mut input, &mut Vec::new());
        assert_eq!(refused, Err(ChunkedError::TrailersTooLong));
    }
}
