//! Frames as Raft entries: what a leader proposes, what followers receive, and the frame each
//! node writes for it once the entry has its place (term, index, base offset).
//!
//! An [`EntryBody`] is a frame's body without its header: the encoded records (or control
//! entries, or Raft's own bytes) and the fields that describe them. The leader encodes it once
//! from the producer's records; replication ships it as bytes; every replica frames it at the
//! entry's index with the base offset its own log gives, which is the same on all replicas
//! because Raft keeps their logs equal up to that entry.

use bytes::Bytes;

use super::{
    BATCH_HEADER_LEN, BatchHeader, BatchKind, Cursor, DecodeError, PREFIX_LEN, checked_body,
    decode_header, encoded_len, put_header, put_records, put_u32_bytes, seal, too_big,
};
use crate::error::{BrokerError, Result};
use crate::limits::MAX_FRAME_BYTES;
use crate::message::Record;

/// Bytes a Raft entry's header adds to a frame: its index.
pub(crate) const RAFT_INDEX_LEN: usize = 8;

/// The place-independent part of one Raft entry's frame.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntryBody {
    kind: BatchKind,
    record_count: u32,
    first_ts: u64,
    max_ts: u64,
    #[serde(with = "serde_bytes_field")]
    bytes: Bytes,
}

/// `Bytes` as one serde byte string (not a sequence of numbers).
mod serde_bytes_field {
    use bytes::Bytes;

    pub(super) fn serialize<S: serde::Serializer>(bytes: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes::copy_from_slice(v))
            }
        }
        d.deserialize_bytes(Visit)
    }
}

impl EntryBody {
    /// The body of a message batch.
    pub fn messages(records: &[Record]) -> Result<EntryBody> {
        let first = records
            .first()
            .ok_or_else(|| BrokerError::invalid("records", "a batch needs at least one record"))?;
        let record_count = u32::try_from(records.len())
            .map_err(|_| too_big(format!("{} records do not fit one batch", records.len())))?;
        let len = records
            .iter()
            .map(encoded_len)
            .fold(0, usize::saturating_add);
        check_fits(len)?;
        let mut bytes = Vec::with_capacity(len);
        put_records(&mut bytes, records)?;
        Ok(EntryBody {
            kind: BatchKind::Messages,
            record_count,
            first_ts: first.timestamp_ms,
            max_ts: records.iter().map(|r| r.timestamp_ms).fold(0, u64::max),
            bytes: Bytes::from(bytes),
        })
    }

    /// The body of a control batch (durable state changes) written at `ts_ms`.
    pub fn control(ts_ms: u64, entries: &[Bytes]) -> Result<EntryBody> {
        let record_count = u32::try_from(entries.len())
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| too_big(format!("{} control entries in one batch", entries.len())))?;
        Ok(EntryBody {
            kind: BatchKind::Control,
            record_count,
            first_ts: ts_ms,
            max_ts: ts_ms,
            bytes: entries_bytes(entries)?,
        })
    }

    /// The body of one of Raft's own entries (`bytes` opaque: the layer above encodes a blank
    /// entry or a membership), written at `ts_ms`.
    pub fn meta(ts_ms: u64, bytes: &Bytes) -> Result<EntryBody> {
        Ok(EntryBody {
            kind: BatchKind::Meta,
            record_count: 1,
            first_ts: ts_ms,
            max_ts: ts_ms,
            bytes: entries_bytes(std::slice::from_ref(bytes))?,
        })
    }

    /// One body holding `bodies` in order, as if each had been its own entry one after
    /// another: message batches become one message batch (their records in order), control
    /// batches one control batch. Refused for an empty list, mixed kinds, Raft's own entries,
    /// or a result over the frame limit.
    pub fn concat(bodies: &[EntryBody]) -> Result<EntryBody> {
        let first = bodies
            .first()
            .ok_or_else(|| BrokerError::invalid("entries", "nothing to join"))?;
        if first.kind == BatchKind::Meta || bodies.iter().any(|b| b.kind != first.kind) {
            return Err(BrokerError::invalid(
                "entries",
                "only message batches, or only control batches, join into one entry",
            ));
        }
        let len = bodies
            .iter()
            .map(EntryBody::len)
            .fold(0, usize::saturating_add);
        check_fits(len)?;
        let record_count = bodies
            .iter()
            .try_fold(0u32, |sum, b| sum.checked_add(b.record_count))
            .ok_or_else(|| too_big("too many records for one entry".into()))?;
        let mut bytes = Vec::with_capacity(len);
        for body in bodies {
            bytes.extend_from_slice(&body.bytes);
        }
        Ok(EntryBody {
            kind: first.kind,
            record_count,
            first_ts: first.first_ts,
            max_ts: bodies.iter().map(|b| b.max_ts).fold(0, u64::max),
            bytes: Bytes::from(bytes),
        })
    }

    /// What the entry carries.
    pub fn kind(&self) -> BatchKind {
        self.kind
    }

    /// Message offsets the entry takes.
    pub fn message_count(&self) -> u32 {
        match self.kind {
            BatchKind::Messages => self.record_count,
            BatchKind::Control | BatchKind::Meta => 0,
        }
    }

    /// Bytes of the body, for queue budgets and replication batching.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the body holds no bytes (never, for a valid entry).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The entry's header at its place in a log.
    pub(crate) fn header(&self, term: u64, index: u64, base_offset: u64) -> BatchHeader {
        BatchHeader {
            kind: self.kind,
            base_offset,
            record_count: self.record_count,
            leader_epoch: term,
            first_ts: self.first_ts,
            max_ts: self.max_ts,
            raft_index: Some(index),
        }
    }

    /// The frame of this entry at `index` of term `term`, its first message at `base_offset`.
    /// The body is trusted: one that came from the wire passes [`EntryBody::check`] first.
    pub(crate) fn frame(
        &self,
        term: u64,
        index: u64,
        base_offset: u64,
    ) -> Result<(BatchHeader, Vec<u8>)> {
        let header = self.header(term, index, base_offset);
        if base_offset
            .checked_add(u64::from(header.message_count()))
            .is_none()
        {
            return Err(too_big(format!("offsets past {base_offset} overflow")));
        }
        let len = PREFIX_LEN + BATCH_HEADER_LEN + RAFT_INDEX_LEN + self.bytes.len();
        check_fits(len)?;
        let mut frame = Vec::with_capacity(len);
        frame.extend_from_slice(&[0; PREFIX_LEN]);
        put_header(&mut frame, &header);
        frame.extend_from_slice(&self.bytes);
        seal(&mut frame)?;
        Ok((header, frame))
    }

    /// Decodes the body once, as a replica does before it accepts an entry from the wire:
    /// every length within the body, the timestamps matching the records, no trailing bytes.
    pub fn check(&self) -> Result<()> {
        let (_, frame) = self.frame(0, 0, 0)?;
        let batch = super::decode_frame(Bytes::from(frame))
            .map_err(|e| BrokerError::invalid("entry", e.to_string()))?;
        if batch.header.kind == BatchKind::Meta && batch.header.record_count != 1 {
            return Err(BrokerError::invalid(
                "entry",
                "a Raft entry of its own holds one value",
            ));
        }
        Ok(())
    }

    /// The entries of a [`EntryBody::control`] body, in order.
    pub fn control_entries(&self) -> Result<Vec<Bytes>> {
        let malformed = || BrokerError::invalid("entry", "not a control body");
        if self.kind != BatchKind::Control {
            return Err(malformed());
        }
        let mut cursor = Cursor {
            buf: self.bytes.clone(),
            pos: 0,
        };
        let mut entries = Vec::new();
        for _ in 0..self.record_count {
            let len = cursor.u32_len().map_err(|_| malformed())?;
            entries.push(cursor.take(len).map_err(|_| malformed())?);
        }
        match cursor.remaining() {
            0 => Ok(entries),
            _ => Err(malformed()),
        }
    }

    /// The opaque bytes of a [`EntryBody::meta`] body.
    pub fn meta_bytes(&self) -> Option<Bytes> {
        let mut cursor = Cursor {
            buf: self.bytes.clone(),
            pos: 0,
        };
        let len = cursor.u32_len().ok()?;
        let bytes = cursor.take(len).ok()?;
        (self.kind == BatchKind::Meta && cursor.remaining() == 0).then_some(bytes)
    }
}

/// An [`EntryBody`] on the wire between replicas:
/// `kind u8 (0 messages, 1 control, 2 meta) | record_count u32 | first_ts u64 | max_ts u64 |
/// len u32 | bytes`, little-endian.
impl EntryBody {
    /// Appends the body's wire form to `out`.
    pub fn put_wire(&self, out: &mut Vec<u8>) {
        out.push(match self.kind {
            BatchKind::Messages => 0,
            BatchKind::Control => 1,
            BatchKind::Meta => 2,
        });
        out.extend_from_slice(&self.record_count.to_le_bytes());
        out.extend_from_slice(&self.first_ts.to_le_bytes());
        out.extend_from_slice(&self.max_ts.to_le_bytes());
        out.extend_from_slice(&(self.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.bytes);
    }

    /// Reads a body's wire form from the front of `wire` (sharing its bytes) and checks it
    /// ([`EntryBody::check`]): a body from another node is never trusted.
    pub fn take_wire(wire: &mut Bytes) -> Result<EntryBody> {
        let malformed = |what: &str| BrokerError::invalid("entry", format!("malformed {what}"));
        let mut cursor = Cursor {
            buf: wire.clone(),
            pos: 0,
        };
        let kind = match cursor.u8().map_err(|_| malformed("kind"))? {
            0 => BatchKind::Messages,
            1 => BatchKind::Control,
            2 => BatchKind::Meta,
            _ => return Err(malformed("kind")),
        };
        let record_count = cursor.u32().map_err(|_| malformed("count"))?;
        let first_ts = cursor.u64().map_err(|_| malformed("timestamp"))?;
        let max_ts = cursor.u64().map_err(|_| malformed("timestamp"))?;
        let len = cursor.u32_len().map_err(|_| malformed("length"))?;
        check_fits(len)?;
        let bytes = cursor.take(len).map_err(|_| malformed("body"))?;
        let body = EntryBody {
            kind,
            record_count,
            first_ts,
            max_ts,
            bytes,
        };
        body.check()?;
        *wire = wire.slice(cursor.pos..);
        Ok(body)
    }
}

fn entries_bytes(entries: &[Bytes]) -> Result<Bytes> {
    let len = entries
        .iter()
        .map(|e| 4 + e.len())
        .fold(0, usize::saturating_add);
    check_fits(len)?;
    let mut bytes = Vec::with_capacity(len);
    for entry in entries {
        put_u32_bytes(&mut bytes, entry, "control entry")?;
    }
    Ok(Bytes::from(bytes))
}

fn check_fits(body_len: usize) -> Result<()> {
    let frame_len = body_len.saturating_add(PREFIX_LEN + BATCH_HEADER_LEN + RAFT_INDEX_LEN);
    if frame_len > MAX_FRAME_BYTES {
        return Err(too_big(format!(
            "the entry's frame would be {frame_len} bytes, over the limit of {MAX_FRAME_BYTES}"
        )));
    }
    Ok(())
}

/// Splits a whole frame of a Raft entry into its header and body, checking the CRC but not
/// decoding the records (a replica that reads an entry to send it on does not need them).
pub(crate) fn split_entry(frame: Bytes) -> Result<(BatchHeader, EntryBody), DecodeError> {
    let mut cursor = Cursor {
        buf: checked_body(frame)?,
        pos: 0,
    };
    let header = decode_header(&mut cursor)?;
    if header.raft_index.is_none() {
        return Err(DecodeError::BadHeader("not a Raft entry"));
    }
    let rest = cursor.remaining();
    let bytes = cursor.take(rest)?;
    let body = EntryBody {
        kind: header.kind,
        record_count: header.record_count,
        first_ts: header.first_ts,
        max_ts: header.max_ts,
        bytes,
    };
    Ok((header, body))
}
