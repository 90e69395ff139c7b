//! Raft RPCs as bytes.
//!
//! Appends carry the entries' bodies, which is nearly all of what replication moves, so they
//! have a binary form that ships each body's bytes as they are:
//! ```text
//! append  = b"WAE1" | head_len u32 | head (JSON: vote, prev_log_id, leader_commit)
//!           | count u32 | entry{count}
//! entry   = term u64 | index u64 | tag u8, then by tag:
//!           0 blank | 1 body (EntryBody's wire form) | 2 membership: len u32 | JSON
//! ```
//! Every other request and every answer is JSON (votes, snapshot chunks of a few bytes of
//! partition state, and `Result`s of small responses). Decoding never trusts a length: each
//! is checked against what is left, and each body is checked as a frame before it is kept.

use bytes::Bytes;
use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};
use openraft::{Entry, EntryPayload, LogId, Membership, Vote};
use serde::{Deserialize, Serialize};

use super::transport::RpcError;
use super::types::{NodeInfo, TypeConfig, log_id};
use crate::storage::EntryBody;

const APPEND_MAGIC: &[u8; 4] = b"WAE1";
const TAG_BLANK: u8 = 0;
const TAG_BODY: u8 = 1;
const TAG_MEMBERSHIP: u8 = 2;

/// The small fields of an append, as JSON.
#[derive(Serialize, Deserialize)]
struct AppendHead {
    vote: Vote<u64>,
    prev_log_id: Option<LogId<u64>>,
    leader_commit: Option<LogId<u64>>,
}

/// An append request's bytes.
pub(crate) fn encode_append(request: &AppendEntriesRequest<TypeConfig>) -> Result<Bytes, RpcError> {
    let head = serde_json::to_vec(&AppendHead {
        vote: request.vote,
        prev_log_id: request.prev_log_id,
        leader_commit: request.leader_commit,
    })
    .map_err(|e| malformed(e.to_string()))?;
    let bodies: usize = request
        .entries
        .iter()
        .map(|e| match &e.payload {
            EntryPayload::Normal(body) => body.len() + 32,
            _ => 64,
        })
        .sum();
    let mut out = Vec::with_capacity(12 + head.len() + bodies);
    out.extend_from_slice(APPEND_MAGIC);
    put_len(&mut out, head.len())?;
    out.extend_from_slice(&head);
    put_len(&mut out, request.entries.len())?;
    for entry in &request.entries {
        out.extend_from_slice(&entry.log_id.leader_id.term.to_le_bytes());
        out.extend_from_slice(&entry.log_id.index.to_le_bytes());
        match &entry.payload {
            EntryPayload::Blank => out.push(TAG_BLANK),
            EntryPayload::Normal(body) => {
                out.push(TAG_BODY);
                body.put_wire(&mut out);
            }
            EntryPayload::Membership(membership) => {
                out.push(TAG_MEMBERSHIP);
                let json = serde_json::to_vec(membership).map_err(|e| malformed(e.to_string()))?;
                put_len(&mut out, json.len())?;
                out.extend_from_slice(&json);
            }
        }
    }
    Ok(Bytes::from(out))
}

/// An append request from its bytes.
pub(crate) fn decode_append(mut wire: Bytes) -> Result<AppendEntriesRequest<TypeConfig>, RpcError> {
    if take(&mut wire, 4)?.as_ref() != APPEND_MAGIC {
        return Err(malformed("not an append".into()));
    }
    let head_len = take_len(&mut wire)?;
    let head: AppendHead = serde_json::from_slice(&take(&mut wire, head_len)?)
        .map_err(|e| malformed(e.to_string()))?;
    let count = take_len(&mut wire)?;
    // Each entry takes at least 17 bytes: a count larger than that allows is a lie.
    if count > wire.len() / 17 {
        return Err(malformed(format!(
            "{count} entries in {} bytes",
            wire.len()
        )));
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let term = take_u64(&mut wire)?;
        let index = take_u64(&mut wire)?;
        let payload = match take(&mut wire, 1)?[0] {
            TAG_BLANK => EntryPayload::Blank,
            TAG_BODY => EntryPayload::Normal(
                EntryBody::take_wire(&mut wire).map_err(|e| malformed(e.to_string()))?,
            ),
            TAG_MEMBERSHIP => {
                let len = take_len(&mut wire)?;
                let membership: Membership<u64, NodeInfo> =
                    serde_json::from_slice(&take(&mut wire, len)?)
                        .map_err(|e| malformed(e.to_string()))?;
                EntryPayload::Membership(membership)
            }
            tag => return Err(malformed(format!("entry tag {tag}"))),
        };
        entries.push(Entry {
            log_id: log_id(term, index),
            payload,
        });
    }
    if !wire.is_empty() {
        return Err(malformed(format!("{} bytes after the entries", wire.len())));
    }
    Ok(AppendEntriesRequest {
        vote: head.vote,
        prev_log_id: head.prev_log_id,
        entries,
        leader_commit: head.leader_commit,
    })
}

/// Any request or answer as JSON.
pub(crate) fn encode_json<T: Serialize>(value: &T) -> Result<Bytes, RpcError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| malformed(e.to_string()))
}

/// Any request or answer from JSON.
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(wire: &[u8]) -> Result<T, RpcError> {
    serde_json::from_slice(wire).map_err(|e| malformed(e.to_string()))
}

/// What an append answers: the response, or the remote Raft's refusal.
pub(crate) type AppendAnswer = Result<AppendEntriesResponse<u64>, RaftError<u64>>;

fn malformed(reason: String) -> RpcError {
    RpcError::Malformed {
        rpc: "raft",
        reason,
    }
}

fn put_len(out: &mut Vec<u8>, len: usize) -> Result<(), RpcError> {
    let len = u32::try_from(len).map_err(|_| malformed(format!("{len} does not fit a length")))?;
    out.extend_from_slice(&len.to_le_bytes());
    Ok(())
}

fn take(wire: &mut Bytes, len: usize) -> Result<Bytes, RpcError> {
    if wire.len() < len {
        return Err(malformed(format!(
            "{len} bytes needed, {} left",
            wire.len()
        )));
    }
    Ok(wire.split_to(len))
}

fn take_len(wire: &mut Bytes) -> Result<usize, RpcError> {
    let bytes = take(wire, 4)?;
    Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize)
}

fn take_u64(wire: &mut Bytes) -> Result<u64, RpcError> {
    let bytes = take(wire, 8)?;
    let mut array = [0; 8];
    array.copy_from_slice(&bytes);
    Ok(u64::from_le_bytes(array))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::message::Record;

    fn request() -> AppendEntriesRequest<TypeConfig> {
        let record = Record {
            id: "m-1".into(),
            timestamp_ms: 5,
            key: Some("k".into()),
            value: Bytes::from_static(b"\\x00\\xffvalue"),
            binary: true,
            scheduled: false,
            client_id: false,
            headers: vec![("h".into(), "v".into())],
            tags: vec!["t".into()],
            trace: None,
            origin: None,
        };
        let members = BTreeSet::from([1, 2, 3]);
        AppendEntriesRequest {
            vote: Vote::new_committed(4, 1),
            prev_log_id: Some(log_id(3, 9)),
            entries: vec![
                Entry {
                    log_id: log_id(4, 10),
                    payload: EntryPayload::Blank,
                },
                Entry {
                    log_id: log_id(4, 11),
                    payload: EntryPayload::Normal(EntryBody::messages(&[record]).expect("body")),
                },
                Entry {
                    log_id: log_id(4, 12),
                    payload: EntryPayload::Membership(Membership::new(vec![members], None)),
                },
            ],
            leader_commit: Some(log_id(4, 10)),
        }
    }

    #[test]
    fn an_append_round_trips_through_its_bytes() {
        let original = request();
        let decoded = decode_append(encode_append(&original).expect("encodes")).expect("decodes");
        assert_eq!(decoded.vote, original.vote);
        assert_eq!(decoded.prev_log_id, original.prev_log_id);
        assert_eq!(decoded.leader_commit, original.leader_commit);
        assert_eq!(decoded.entries, original.entries);
    }

    #[test]
    fn every_cut_or_garbled_append_is_refused_never_a_panic() {
        let wire = encode_append(&request()).expect("encodes");
        for cut in 0..wire.len() {
            assert!(
                decode_append(wire.slice(..cut)).is_err(),
                "a cut at {cut} decoded"
            );
        }
        let mut longer = wire.to_vec();
        longer.push(0);
        assert!(
            decode_append(Bytes::from(longer)).is_err(),
            "trailing bytes accepted"
        );
        for at in 0..wire.len() {
            let mut garbled = wire.to_vec();
            garbled[at] ^= 0xff;
            // Some flips change only a value (a term, a timestamp); none may panic.
            let _ = decode_append(Bytes::from(garbled));
        }
    }
}
