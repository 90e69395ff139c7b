//! The durable changes of the delay schedule, as control entries of the log of the partition a
//! delayed message is routed to: the schedule in sled is derived from them (and from the
//! moved messages themselves, which reach the log marked [`Record::scheduled`]).
//!
//! ```text
//! entry = kind u8 | due_ms u64 | seq u64 | fields by kind (integers little-endian)
//!   (kinds 64..=127 are this module's, see crate::control)
//!   64 scheduled   frame: u32 len, bytes: a one-record message frame of the log's codec
//!                  (storage::codec, with its own CRC)
//!   65 cancelled   id: u16 len, UTF-8 bytes
//! ```
//! The partition is not in the entry: it is the partition whose log holds it. Decoding checks
//! every length against what is left; an entry that does not decode is an error, never a
//! guess.

use bytes::{BufMut, Bytes, BytesMut};

use crate::control::{EntryReader, Truncated};
use crate::error::Result;
use crate::message::Record;
use crate::storage::codec;

/// One durable change of the schedule of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleEvent {
    /// A delayed message was produced: it is due at `due_ms`.
    Scheduled {
        /// When it is due, Unix epoch milliseconds.
        due_ms: u64,
        /// Tie-breaker among messages due at the same millisecond.
        seq: u64,
        /// The message, as it will be appended when due (without the `scheduled` mark).
        record: Record,
    },
    /// A delayed message was cancelled before it was moved.
    Cancelled {
        /// Its due time.
        due_ms: u64,
        /// Its tie-breaker.
        seq: u64,
        /// Its id.
        id: String,
    },
}

/// Why bytes are not a schedule event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleDecodeError {
    /// The entry ends before a field does.
    #[error("the entry ends early")]
    Truncated,
    /// An unknown kind byte.
    #[error("unknown schedule event kind {0}")]
    UnknownKind(u8),
    /// A field holds what it cannot, or bytes follow the last field.
    #[error("malformed schedule event: {0}")]
    Malformed(&'static str),
}

const SCHEDULED: u8 = 64;
const CANCELLED: u8 = 65;

impl ScheduleEvent {
    /// The control entry for the log. Fails only for a record the log's codec refuses.
    pub fn encode(&self) -> Result<Bytes> {
        let mut out = BytesMut::new();
        match self {
            ScheduleEvent::Scheduled {
                due_ms,
                seq,
                record,
            } => {
                let (_, frame) = codec::encode_batch(0, 0, std::slice::from_ref(record))?;
                head(&mut out, SCHEDULED, *due_ms, *seq);
                // The frame was built within the codec's frame limit, far below u32::MAX.
                out.put_u32_le(u32::try_from(frame.len()).unwrap_or(u32::MAX));
                out.put_slice(&frame);
            }
            ScheduleEvent::Cancelled { due_ms, seq, id } => {
                head(&mut out, CANCELLED, *due_ms, *seq);
                // Ids are at most `MAX_ID_BYTES`, far below u16::MAX.
                out.put_u16_le(u16::try_from(id.len()).unwrap_or(u16::MAX));
                out.put_slice(id.as_bytes());
            }
        }
        Ok(out.freeze())
    }

    /// Decodes a control entry.
    pub fn decode(entry: &[u8]) -> Result<ScheduleEvent, ScheduleDecodeError> {
        let mut input = EntryReader::new(entry);
        let kind = input.u8()?;
        let due_ms = input.u64()?;
        let seq = input.u64()?;
        let event = match kind {
            SCHEDULED => {
                let len = input.u32()? as usize;
                let frame = Bytes::copy_from_slice(input.take(len)?);
                let mut batch = codec::decode_frame(frame)
                    .map_err(|_| ScheduleDecodeError::Malformed("the record frame"))?;
                let record = batch
                    .records
                    .pop()
                    .filter(|_| batch.records.is_empty())
                    .ok_or(ScheduleDecodeError::Malformed("not one record"))?;
                ScheduleEvent::Scheduled {
                    due_ms,
                    seq,
                    record,
                }
            }
            CANCELLED => {
                let len = usize::from(u16::from_le_bytes(input.array()?));
                let id = String::from_utf8(input.take(len)?.to_vec())
                    .map_err(|_| ScheduleDecodeError::Malformed("the id is not UTF-8"))?;
                ScheduleEvent::Cancelled { due_ms, seq, id }
            }
            other => return Err(ScheduleDecodeError::UnknownKind(other)),
        };
        if !input.is_done() {
            return Err(ScheduleDecodeError::Malformed("bytes after the last field"));
        }
        Ok(event)
    }
}

fn head(out: &mut BytesMut, kind: u8, due_ms: u64, seq: u64) {
    out.put_u8(kind);
    out.put_u64_le(due_ms);
    out.put_u64_le(seq);
}

impl From<Truncated> for ScheduleDecodeError {
    fn from(_: Truncated) -> Self {
        ScheduleDecodeError::Truncated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{self, ControlOwner};

    fn every_kind() -> Vec<ScheduleEvent> {
        vec![
            ScheduleEvent::Scheduled {
                due_ms: 1_700_000_000_000,
                seq: 7,
                record: Record {
                    id: "order-1".into(),
                    timestamp_ms: 5,
                    key: Some("k".into()),
                    value: Bytes::from_static(b"v"),
                    binary: true,
                    scheduled: false,
                    client_id: true,
                    headers: vec![("h".into(), "v".into())],
                    tags: vec!["t".into()],
                    trace: crate::TraceContext::parse(
                        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                        Some("k=v"),
                    )
                    .ok(),
                    origin: Some(std::sync::Arc::new(crate::Origin {
                        principal: Some("alice".into()),
                        address: "192.0.2.1".parse().ok(),
                        node: Some(3),
                    })),
                },
            },
            ScheduleEvent::Cancelled {
                due_ms: u64::MAX,
                seq: 0,
                id: "order-1".into(),
            },
        ]
    }

    #[test]
    fn every_kind_of_event_round_trips_and_is_owned_by_the_schedule() {
        for event in every_kind() {
            let entry = event.encode().expect("encode");
            assert_eq!(control::owner(&entry), Some(ControlOwner::Schedule));
            assert_eq!(ScheduleEvent::decode(&entry), Ok(event.clone()));
        }
    }

    #[test]
    fn every_truncation_and_any_trailing_byte_fail_to_decode() {
        for event in every_kind() {
            let entry = event.encode().expect("encode");
            for cut in 0..entry.len() {
                assert!(
                    ScheduleEvent::decode(&entry[..cut]).is_err(),
                    "{event:?} cut at {cut}"
                );
            }
            let mut longer = entry.to_vec();
            longer.push(0);
            assert!(ScheduleEvent::decode(&longer).is_err());
        }
        let mut unknown = vec![66];
        unknown.extend_from_slice(&[0; 16]);
        assert_eq!(
            ScheduleEvent::decode(&unknown),
            Err(ScheduleDecodeError::UnknownKind(66))
        );
    }

    #[test]
    fn a_record_frame_that_fails_its_crc_is_refused() {
        let mut entry = every_kind()[0].encode().expect("encode").to_vec();
        let last = entry.len() - 1;
        entry[last] ^= 0xff;
        assert!(matches!(
            ScheduleEvent::decode(&entry),
            Err(ScheduleDecodeError::Malformed(_))
        ));
    }
}
