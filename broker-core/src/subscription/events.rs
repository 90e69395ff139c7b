//! The durable changes of subscription state, as control entries of a partition's log: the log
//! is the truth, and a lease table after a crash is its checkpoint plus these events replayed
//! in log order. Leases themselves (and extends) are not events: a restart or failover lets an
//! in-flight message come back once its lease would have ended, or sooner if it was granted
//! after the last checkpoint. In a cluster a partition leader also records each lease
//! (`leased`, before the receive answers), so a new leader holds what was in flight until its
//! lease would have ended, and accepts its receipts.
//!
//! ```text
//! entry = kind u8 | subscription uid u64 | fields by kind (integers little-endian)
//!   (kinds 1..=63 are this module's, see crate::control)
//!   1 acked           offset u64
//!   2 nacked          offset u64 | attempts u32 | due_ms u64 | key_hash | error
//!   3 redelivered     offset u64 | attempts u32 | key_hash
//!   4 dead-lettered   offset u64
//!   5 sought          offset u64
//!   6 redriven        dead-letter partition u32 | next offset u64
//!   7 leased          offset u64 | attempts u32 | lease u64 | deadline_ms u64 | key_hash
//! key_hash = u8 present, [u64]      error = u8 present, [u16 len, UTF-8 bytes]
//! ```
//! Decoding checks every length against what is left; an entry that does not decode is an
//! error, never a guess (the frame holding it passed its CRC, so it is a format mismatch).

use bytes::{BufMut, Bytes, BytesMut};

use super::MAX_ERROR_LEN;
use crate::control::{EntryReader, Truncated};

/// One durable change of a subscription's state on one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionEvent {
    /// A leased message was acked.
    Acked {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
    },
    /// A leased message was nacked: it waits until `due_ms` (or is dead-lettered when out of
    /// deliveries).
    Nacked {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
        /// Deliveries made so far.
        attempts: u32,
        /// When it may be delivered again.
        due_ms: u64,
        /// Hash of its key, for ordered subscriptions.
        key_hash: Option<u64>,
        /// The consumer's error text, for its dead letter.
        error: Option<String>,
    },
    /// A message was delivered again (its attempt count, so `max_deliveries` survives a
    /// restart); written without waiting for it.
    Redelivered {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
        /// Deliveries made so far, this one included.
        attempts: u32,
        /// Hash of its key, for ordered subscriptions.
        key_hash: Option<u64>,
    },
    /// A message out of deliveries reached the dead-letter topic.
    DeadLettered {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
    },
    /// The subscription was moved to `offset` on this partition (seek).
    Sought {
        /// The subscription incarnation.
        subscription: u64,
        /// The new position.
        offset: u64,
    },
    /// A message was leased (in a cluster only; the receive waits for it): a new
    /// partition leader holds it until `deadline_ms` and accepts the receipt of `lease`.
    Leased {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
        /// Deliveries made so far, this one included.
        attempts: u32,
        /// The lease id the receipt carries.
        lease: u64,
        /// When the lease ends.
        deadline_ms: u64,
        /// Hash of its key, for ordered subscriptions.
        key_hash: Option<u64>,
    },
    /// Redrive moved the dead letters of a dead-letter partition below `next_offset` back.
    Redriven {
        /// The subscription incarnation.
        subscription: u64,
        /// The dead-letter topic's partition.
        dead_letter_partition: u32,
        /// Where redrive continues on it.
        next_offset: u64,
    },
}

/// Why bytes are not an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventDecodeError {
    /// The entry ends before a field does.
    #[error("the entry ends early")]
    Truncated,
    /// An unknown kind byte.
    #[error("unknown event kind {0}")]
    UnknownKind(u8),
    /// A presence flag other than 0 or 1, or bytes after the last field.
    #[error("malformed event: {0}")]
    Malformed(&'static str),
}

const ACKED: u8 = 1;
const NACKED: u8 = 2;
const REDELIVERED: u8 = 3;
const DEAD_LETTERED: u8 = 4;
const SOUGHT: u8 = 5;
const REDRIVEN: u8 = 6;
const LEASED: u8 = 7;

impl SubscriptionEvent {
    /// The subscription incarnation the event belongs to.
    pub fn subscription(&self) -> u64 {
        match self {
            SubscriptionEvent::Acked { subscription, .. }
            | SubscriptionEvent::Nacked { subscription, .. }
            | SubscriptionEvent::Redelivered { subscription, .. }
            | SubscriptionEvent::DeadLettered { subscription, .. }
            | SubscriptionEvent::Sought { subscription, .. }
            | SubscriptionEvent::Leased { subscription, .. }
            | SubscriptionEvent::Redriven { subscription, .. } => *subscription,
        }
    }

    /// The control entry for the log.
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(48);
        match self {
            SubscriptionEvent::Acked {
                subscription,
                offset,
            } => head(&mut out, ACKED, *subscription, *offset),
            SubscriptionEvent::Nacked {
                subscription,
                offset,
                attempts,
                due_ms,
                key_hash,
                error,
            } => {
                head(&mut out, NACKED, *subscription, *offset);
                out.put_u32_le(*attempts);
                out.put_u64_le(*due_ms);
                put_key_hash(&mut out, *key_hash);
                match error {
                    Some(text) => {
                        let text = truncated(text);
                        out.put_u8(1);
                        out.put_u16_le(u16::try_from(text.len()).unwrap_or(u16::MAX));
                        out.put_slice(text.as_bytes());
                    }
                    None => out.put_u8(0),
                }
            }
            SubscriptionEvent::Redelivered {
                subscription,
                offset,
                attempts,
                key_hash,
            } => {
                head(&mut out, REDELIVERED, *subscription, *offset);
                out.put_u32_le(*attempts);
                put_key_hash(&mut out, *key_hash);
            }
            SubscriptionEvent::DeadLettered {
                subscription,
                offset,
            } => head(&mut out, DEAD_LETTERED, *subscription, *offset),
            SubscriptionEvent::Sought {
                subscription,
                offset,
            } => head(&mut out, SOUGHT, *subscription, *offset),
            SubscriptionEvent::Leased {
                subscription,
                offset,
                attempts,
                lease,
                deadline_ms,
                key_hash,
            } => {
                head(&mut out, LEASED, *subscription, *offset);
                out.put_u32_le(*attempts);
                out.put_u64_le(*lease);
                out.put_u64_le(*deadline_ms);
                put_key_hash(&mut out, *key_hash);
            }
            SubscriptionEvent::Redriven {
                subscription,
                dead_letter_partition,
                next_offset,
            } => {
                out.put_u8(REDRIVEN);
                out.put_u64_le(*subscription);
                out.put_u32_le(*dead_letter_partition);
                out.put_u64_le(*next_offset);
            }
        }
        out.freeze()
    }

    /// Decodes a control entry.
    pub fn decode(entry: &[u8]) -> Result<SubscriptionEvent, EventDecodeError> {
        let mut input = EntryReader::new(entry);
        let kind = input.u8()?;
        let subscription = input.u64()?;
        let event = match kind {
            ACKED => SubscriptionEvent::Acked {
                subscription,
                offset: input.u64()?,
            },
            NACKED => SubscriptionEvent::Nacked {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                due_ms: input.u64()?,
                key_hash: key_hash(&mut input)?,
                error: error(&mut input)?,
            },
            REDELIVERED => SubscriptionEvent::Redelivered {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                key_hash: key_hash(&mut input)?,
            },
            DEAD_LETTERED => SubscriptionEvent::DeadLettered {
                subscription,
                offset: input.u64()?,
            },
            SOUGHT => SubscriptionEvent::Sought {
                subscription,
                offset: input.u64()?,
            },
            LEASED => SubscriptionEvent::Leased {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                lease: input.u64()?,
                deadline_ms: input.u64()?,
                key_hash: key_hash(&mut input)?,
            },
            REDRIVEN => SubscriptionEvent::Redriven {
                subscription,
                dead_letter_partition: input.u32()?,
                next_offset: input.u64()?,
            },
            other => return Err(EventDecodeError::UnknownKind(other)),
        };
        if !input.is_done() {
            return Err(EventDecodeError::Malformed("bytes after the last field"));
        }
        Ok(event)
    }
}

/// The error text as stored: at most [`MAX_ERROR_LEN`] bytes, cut at a character boundary.
fn truncated(text: &str) -> &str {
    let mut end = text.len().min(MAX_ERROR_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn head(out: &mut BytesMut, kind: u8, subscription: u64, offset: u64) {
    out.put_u8(kind);
    out.put_u64_le(subscription);
    out.put_u64_le(offset);
}

fn put_key_hash(out: &mut BytesMut, key_hash: Option<u64>) {
    match key_hash {
        Some(hash) => {
            out.put_u8(1);
            out.put_u64_le(hash);
        }
        None => out.put_u8(0),
    }
}

impl From<Truncated> for EventDecodeError {
    fn from(_: Truncated) -> Self {
        EventDecodeError::Truncated
    }
}

/// A presence flag: 0 or 1.
fn present(input: &mut EntryReader<'_>) -> Result<bool, EventDecodeError> {
    match input.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(EventDecodeError::Malformed("a presence flag is not 0 or 1")),
    }
}

fn key_hash(input: &mut EntryReader<'_>) -> Result<Option<u64>, EventDecodeError> {
    Ok(if present(input)? {
        Some(input.u64()?)
    } else {
        None
    })
}

fn error(input: &mut EntryReader<'_>) -> Result<Option<String>, EventDecodeError> {
    if !present(input)? {
        return Ok(None);
    }
    let len = usize::from(u16::from_le_bytes(input.array()?));
    let bytes = input.take(len)?;
    String::from_utf8(bytes.to_vec())
        .map(Some)
        .map_err(|_| EventDecodeError::Malformed("the error text is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<SubscriptionEvent> {
        vec![
            SubscriptionEvent::Acked {
                subscription: 7,
                offset: 42,
            },
            SubscriptionEvent::Nacked {
                subscription: 7,
                offset: 43,
                attempts: 3,
                due_ms: 1_700_000_000_000,
                key_hash: Some(99),
                error: Some("boom ü".into()),
            },
            SubscriptionEvent::Nacked {
                subscription: 7,
                offset: 44,
                attempts: 1,
                due_ms: 0,
                key_hash: None,
                error: None,
            },
            SubscriptionEvent::Redelivered {
                subscription: u64::MAX,
                offset: u64::MAX,
                attempts: u32::MAX,
                key_hash: Some(0),
            },
            SubscriptionEvent::DeadLettered {
                subscription: 1,
                offset: 0,
            },
            SubscriptionEvent::Sought {
                subscription: 1,
                offset: 5,
            },
            SubscriptionEvent::Redriven {
                subscription: 2,
                dead_letter_partition: 3,
                next_offset: 4,
            },
            SubscriptionEvent::Leased {
                subscription: 3,
                offset: 9,
                attempts: 2,
                lease: u64::MAX,
                deadline_ms: 1_700_000_030_000,
                key_hash: Some(5),
            },
        ]
    }

    #[test]
    fn every_kind_of_event_round_trips() {
        for event in every_kind() {
            let entry = event.encode();
            assert_eq!(SubscriptionEvent::decode(&entry), Ok(event.clone()));
        }
    }

    #[test]
    fn every_truncation_and_any_trailing_byte_fail_to_decode() {
        for event in every_kind() {
            let entry = event.encode();
            for cut in 0..entry.len() {
                assert!(
                    SubscriptionEvent::decode(&entry[..cut]).is_err(),
                    "{event:?} cut at {cut}"
                );
            }
            let mut longer = entry.to_vec();
            longer.push(0);
            assert!(SubscriptionEvent::decode(&longer).is_err());
        }
        assert_eq!(
            SubscriptionEvent::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(EventDecodeError::UnknownKind(9))
        );
    }

    #[test]
    fn a_long_error_text_is_kept_to_its_limit_at_a_character_boundary() {
        let event = SubscriptionEvent::Nacked {
            subscription: 1,
            offset: 1,
            attempts: 1,
            due_ms: 1,
            key_hash: None,
            error: Some("é".repeat(MAX_ERROR_LEN)),
        };
        let Ok(SubscriptionEvent::Nacked {
            error: Some(text), ..
        }) = SubscriptionEvent::decode(&event.encode())
        else {
            panic!("decodes");
        };
        assert!(text.len() <= MAX_ERROR_LEN && text.chars().all(|c| c == 'é'));
    }
}
