//! The frames of a peer connection (see [`super::peer_session`]): Raft RPCs and their
//! answers, many in flight at once on one TCP connection, each matched to its caller by id.
//!
//! Every frame is `u32 length` (big-endian, of what follows it), `u8 kind`, `u64 id`, then
//! by kind:
//! - request (1): `u8` length and the RPC's name, `u16` length and the group's name (as in
//!   the HTTP path, [`GroupId::to_path`]), then the request's bytes to the end;
//! - answer (2): `u16` status (200, or the HTTP status the same refusal has on the HTTP
//!   route), then the answer's bytes (a refusal's one-line reason) to the end;
//! - ping (3) and pong (4): nothing more; a pong carries its ping's id.
//!
//! Names rather than numbers for the RPC and the group, so that a node meeting a name it
//! does not know refuses that one call (404) and the connection goes on.

use broker_core::raft::{GroupId, MAX_RPC_BYTES, Rpc};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Largest frame either side reads: the largest RPC body plus room for its head.
pub(super) const MAX_FRAME_BYTES: usize = MAX_RPC_BYTES + 64 * 1024;

const REQUEST: u8 = 1;
const ANSWER: u8 = 2;
const PING: u8 = 3;
const PONG: u8 = 4;
/// `u32` length, `u8` kind, `u64` id.
const HEAD_BYTES: usize = 4 + 1 + 8;

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Frame {
    /// A call: the RPC `rpc` for `group`, with its request bytes. `route` is `None` when
    /// the names are not ones this node knows.
    Request {
        /// Matches the answer to the call.
        id: u64,
        /// The group and RPC, if known here.
        route: Option<(GroupId, Rpc)>,
        /// The request's bytes.
        body: Bytes,
    },
    /// The answer to the request with the same id.
    Answer {
        /// The request's id.
        id: u64,
        /// 200, or the refusal's HTTP status.
        status: u16,
        /// The answer's bytes, or the refusal's reason.
        body: Bytes,
    },
    /// Are you there? (sent by a caller whose connection has been silent).
    Ping {
        /// Echoed in the pong.
        id: u64,
    },
    /// Yes.
    Pong {
        /// The ping's id.
        id: u64,
    },
}

/// Why the bytes read are not a frame: the connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum FrameError {
    /// A length over [`MAX_FRAME_BYTES`] (or under a frame's head).
    #[error("a frame of {0} bytes is outside the allowed sizes")]
    Size(usize),
    /// A kind this version does not know, or a frame cut short inside its head.
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
}

/// Appends the frame of a request to `out`.
pub(super) fn put_request(out: &mut BytesMut, id: u64, group: &GroupId, rpc: Rpc, body: &[u8]) {
    let group = group.to_path();
    let rpc = rpc.as_str();
    // Names are far below these limits (topic names are at most `MAX_NAME_LEN`); one over
    // them is sent empty, which the peer refuses as an unknown group.
    let (rpc, rpc_len) = u8::try_from(rpc.len()).map_or(("", 0), |n| (rpc, n));
    let (group, group_len) = u16::try_from(group.len()).map_or(("", 0), |n| (group.as_str(), n));
    let length = 1 + 8 + 1 + rpc.len() + 2 + group.len() + body.len();
    out.reserve(4 + length);
    put_length(out, length);
    out.put_u8(REQUEST);
    out.put_u64(id);
    out.put_u8(rpc_len);
    out.put_slice(rpc.as_bytes());
    out.put_u16(group_len);
    out.put_slice(group.as_bytes());
    out.put_slice(body);
}

/// Appends the frame of an answer to `out`.
pub(super) fn put_answer(out: &mut BytesMut, id: u64, status: u16, body: &[u8]) {
    let length = 1 + 8 + 2 + body.len();
    out.reserve(4 + length);
    put_length(out, length);
    out.put_u8(ANSWER);
    out.put_u64(id);
    out.put_u16(status);
    out.put_slice(body);
}

/// Appends a ping (or, `pong`, its answer) to `out`.
pub(super) fn put_ping(out: &mut BytesMut, id: u64, pong: bool) {
    put_length(out, 1 + 8);
    out.put_u8(if pong { PONG } else { PING });
    out.put_u64(id);
}

fn put_length(out: &mut BytesMut, length: usize) {
    // Callers bound bodies by MAX_RPC_BYTES; a longer frame is refused by the reader.
    out.put_u32(u32::try_from(length).unwrap_or(u32::MAX));
}

/// Takes the first whole frame off `buffer`, if it holds one (`Ok(None)`: read more).
pub(super) fn take_frame(buffer: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
    if buffer.len() < 4 {
        return Ok(None);
    }
    let length = u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize;
    if !(HEAD_BYTES - 4..=MAX_FRAME_BYTES).contains(&length) {
        return Err(FrameError::Size(length));
    }
    if buffer.len() < 4 + length {
        buffer.reserve(4 + length - buffer.len());
        return Ok(None);
    }
    buffer.advance(4);
    let mut frame = buffer.split_to(length).freeze();
    let kind = frame.get_u8();
    let id = frame.get_u64();
    match kind {
        REQUEST => request(id, frame).map(Some),
        ANSWER => {
            if frame.remaining() < 2 {
                return Err(FrameError::Malformed("an answer without its status"));
            }
            let status = frame.get_u16();
            Ok(Some(Frame::Answer {
                id,
                status,
                body: frame,
            }))
        }
        PING => Ok(Some(Frame::Ping { id })),
        PONG => Ok(Some(Frame::Pong { id })),
        _ => Err(FrameError::Malformed("unknown frame kind")),
    }
}

fn request(id: u64, mut frame: Bytes) -> Result<Frame, FrameError> {
    let cut = FrameError::Malformed("a request cut short in its names");
    let rpc_len = usize::from(*frame.first().ok_or(cut.clone())?);
    if frame.remaining() < 1 + rpc_len + 2 {
        return Err(cut);
    }
    frame.advance(1);
    let rpc = frame.split_to(rpc_len);
    let group_len = usize::from(frame.get_u16());
    if frame.remaining() < group_len {
        return Err(cut);
    }
    let group = frame.split_to(group_len);
    let rpc = std::str::from_utf8(&rpc).ok().and_then(Rpc::parse);
    let group = std::str::from_utf8(&group)
        .ok()
        .and_then(GroupId::from_path);
    Ok(Frame::Request {
        id,
        route: group.zip(rpc),
        body: frame,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn partition(topic: &str, partition: u32) -> GroupId {
        GroupId::Partition {
            topic: topic.to_owned(),
            partition,
        }
    }

    fn rpcs() -> impl Strategy<Value = Rpc> {
        prop::sample::select(Rpc::ALL.to_vec())
    }

    fn frames() -> impl Strategy<Value = Frame> {
        let body = prop::collection::vec(any::<u8>(), 0..300).prop_map(Bytes::from);
        let group = prop_oneof![
            Just(GroupId::Controller),
            ("[a-z][a-z0-9._-]{0,20}", any::<u32>()).prop_map(|(t, p)| partition(&t, p)),
        ];
        prop_oneof![
            (any::<u64>(), group, rpcs(), body.clone()).prop_map(|(id, g, r, body)| {
                Frame::Request {
                    id,
                    route: Some((g, r)),
                    body,
                }
            }),
            (any::<u64>(), any::<u16>(), body).prop_map(|(id, status, body)| Frame::Answer {
                id,
                status,
                body
            }),
            any::<u64>().prop_map(|id| Frame::Ping { id }),
            any::<u64>().prop_map(|id| Frame::Pong { id }),
        ]
    }

    fn put(out: &mut BytesMut, frame: &Frame) {
        match frame {
            Frame::Request {
                id,
                route: Some((group, rpc)),
                body,
            } => put_request(out, *id, group, *rpc, body),
            Frame::Request { route: None, .. } => unreachable!("not generated"),
            Frame::Answer { id, status, body } => put_answer(out, *id, *status, body),
            Frame::Ping { id } => put_ping(out, *id, false),
            Frame::Pong { id } => put_ping(out, *id, true),
        }
    }

    proptest! {
        /// Frames written back to back come out whole and in order, however the bytes are
        /// cut into reads.
        #[test]
        fn frames_survive_any_cutting_of_the_stream(
            sent in prop::collection::vec(frames(), 1..20),
            cuts in prop::collection::vec(1usize..97, 1..40),
        ) {
            let mut wire = BytesMut::new();
            for frame in &sent {
                put(&mut wire, frame);
            }
            let wire = wire.freeze();
            let mut buffer = BytesMut::new();
            let mut received = Vec::new();
            let mut at = 0;
            for cut in cuts.iter().cycle() {
                if at == wire.len() {
                    break;
                }
                let end = (at + cut).min(wire.len());
                buffer.extend_from_slice(&wire[at..end]);
                at = end;
                while let Some(frame) = take_frame(&mut buffer).expect("well-formed") {
                    received.push(frame);
                }
            }
            prop_assert!(buffer.is_empty());
            prop_assert_eq!(received, sent);
        }
    }

    #[test]
    fn an_unknown_name_is_a_request_without_a_route_and_the_stream_goes_on() {
        let mut wire = BytesMut::new();
        put_request(&mut wire, 7, &partition("orders", 1), Rpc::Vote, b"v");
        // Rename the RPC ("vote" -> "veto"): same length, unknown here.
        let at = wire
            .windows(4)
            .position(|w| w == b"vote")
            .expect("the name is in the frame");
        wire[at..at + 4].copy_from_slice(b"veto");
        put_ping(&mut wire, 8, false);
        assert_eq!(
            take_frame(&mut wire),
            Ok(Some(Frame::Request {
                id: 7,
                route: None,
                body: Bytes::from_static(b"v"),
            }))
        );
        assert_eq!(take_frame(&mut wire), Ok(Some(Frame::Ping { id: 8 })));
    }

    #[test]
    fn oversized_short_and_unknown_frames_end_the_connection() {
        let mut huge = BytesMut::new();
        huge.put_u32(u32::try_from(MAX_FRAME_BYTES + 1).expect("fits"));
        assert!(matches!(take_frame(&mut huge), Err(FrameError::Size(_))));
        let mut short = BytesMut::from(&[0u8, 0, 0, 3, 1, 0, 0][..]);
        assert!(matches!(take_frame(&mut short), Err(FrameError::Size(3))));
        let mut unknown = BytesMut::new();
        put_length(&mut unknown, 9);
        unknown.put_u8(9);
        unknown.put_u64(1);
        assert!(matches!(
            take_frame(&mut unknown),
            Err(FrameError::Malformed(_))
        ));
        let mut cut = BytesMut::new();
        put_length(&mut cut, 10);
        cut.put_u8(REQUEST);
        cut.put_u64(1);
        cut.put_u8(200);
        assert!(matches!(
            take_frame(&mut cut),
            Err(FrameError::Malformed(_))
        ));
    }
}
