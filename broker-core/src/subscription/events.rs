//! The durable changes of subscription state, as control entries of a partition's log: the log
//! is the truth, and a lease table after a crash is its checkpoint plus these events replayed
//! in log order. Leases themselves (and extends) are not events: a restart or failover lets an
//! in-flight message come back once its lease would have ended, or sooner if it was granted
//! after the last checkpoint. In a cluster a partition leader also records each lease
//! (`leased`, before the receive answers), so a new leader holds what was in flight until its
//! lease would have ended, and accepts its receipts.
//!
//! For the message trace, deliveries, acks, nacks and leases name their consumer (who
//! received or settled: the same [`Origin`] a produce records). On a single node every
//! delivery is a `delivered` event, written without waiting for it; in a cluster the `leased`
//! event is the delivery.
//!
//! ```text
//! entry = kind u8 | subscription uid u64 | fields by kind (integers little-endian)
//!   (kinds 1..=63 are this module's, see crate::control)
//!   1 acked           offset u64
//!   2 nacked          offset u64 | attempts u32 | due_ms u64 | key_hash | error
//!   3 redelivered     offset u64 | attempts u32 | key_hash    (no longer written; read)
//!   4 dead-lettered   offset u64
//!   5 sought          offset u64
//!   6 redriven        dead-letter partition u32 | next offset u64
//!   7 leased          offset u64 | attempts u32 | lease u64 | deadline_ms u64 | key_hash
//!   8 delivered       offset u64 | attempts u32 | key_hash | consumer
//!   9 acked_by        as 1, then consumer
//!  10 nacked_by       as 2, then consumer
//!  11 leased_by       as 7, then consumer
//! key_hash = u8 present, [u64]      error = u8 present, [u16 len, UTF-8 bytes]
//! consumer = an origin as a record stores it (storage::codec::extras): fields u8
//!            | [principal: varint len, bytes] | [address: 4 or 16 bytes] | [node: varint]
//! ```
//! An origin with no field set is no consumer: `delivered` then holds the fields byte 0,
//! and an ack, nack or lease without a consumer keeps its old kind (1, 2, 7) and its old
//! bytes, so logs written before consumers were recorded decode as they did; kinds 9 to 11
//! always hold a field. Decoding checks every length against what is left; an entry that
//! does not decode is an error, never a guess (the frame holding it passed its CRC, so it is a
//! format mismatch).

use bytes::{BufMut, Bytes};

use super::MAX_ERROR_LEN;
use crate::control::{EntryReader, Truncated};
use crate::message::Origin;
use crate::storage::codec::extras::{get_origin_fields, put_origin};
use crate::storage::codec::{Cursor, DecodeError};

/// One durable change of a subscription's state on one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionEvent {
    /// A leased message was acked.
    Acked {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
        /// Who acked it.
        consumer: Option<Origin>,
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
        /// Who nacked it.
        consumer: Option<Origin>,
    },
    /// A message was delivered again (its attempt count, so `max_deliveries` survives a
    /// restart); written without waiting for it. No longer written (see
    /// [`SubscriptionEvent::Delivered`]); older logs hold it.
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
        /// Who received it (or extended its lease).
        consumer: Option<Origin>,
    },
    /// A message was delivered (on a single node; a cluster records
    /// [`SubscriptionEvent::Leased`] instead), written without waiting for it: the message
    /// trace's delivery, and, from the second attempt on, its attempt count, so
    /// `max_deliveries` survives a restart.
    Delivered {
        /// The subscription incarnation.
        subscription: u64,
        /// The message's offset.
        offset: u64,
        /// Deliveries made so far, this one included.
        attempts: u32,
        /// Hash of its key, for ordered subscriptions.
        key_hash: Option<u64>,
        /// Who received it.
        consumer: Option<Origin>,
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
const DELIVERED: u8 = 8;
const ACKED_BY: u8 = 9;
const NACKED_BY: u8 = 10;
const LEASED_BY: u8 = 11;

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
            | SubscriptionEvent::Delivered { subscription, .. }
            | SubscriptionEvent::Redriven { subscription, .. } => *subscription,
        }
    }

    /// The consumer the event names, if any (a delivery, ack, nack or lease).
    pub fn consumer(&self) -> Option<&Origin> {
        match self {
            SubscriptionEvent::Acked { consumer, .. }
            | SubscriptionEvent::Nacked { consumer, .. }
            | SubscriptionEvent::Leased { consumer, .. }
            | SubscriptionEvent::Delivered { consumer, .. } => named(consumer.as_ref()),
            SubscriptionEvent::Redelivered { .. }
            | SubscriptionEvent::DeadLettered { .. }
            | SubscriptionEvent::Sought { .. }
            | SubscriptionEvent::Redriven { .. } => None,
        }
    }

    /// The control entry for the log.
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(48);
        match self {
            SubscriptionEvent::Acked {
                subscription,
                offset,
                consumer,
            } => {
                let consumer = named(consumer.as_ref());
                let kind = by_kind(consumer, ACKED_BY, ACKED);
                head(&mut out, kind, *subscription, *offset);
                put_consumer(&mut out, consumer);
            }
            SubscriptionEvent::Nacked {
                subscription,
                offset,
                attempts,
                due_ms,
                key_hash,
                error,
                consumer,
            } => {
                let consumer = named(consumer.as_ref());
                let kind = by_kind(consumer, NACKED_BY, NACKED);
                head(&mut out, kind, *subscription, *offset);
                out.put_u32_le(*attempts);
                out.put_u64_le(*due_ms);
                put_key_hash(&mut out, *key_hash);
                put_error(&mut out, error.as_deref());
                put_consumer(&mut out, consumer);
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
                consumer,
            } => {
                let consumer = named(consumer.as_ref());
                let kind = by_kind(consumer, LEASED_BY, LEASED);
                head(&mut out, kind, *subscription, *offset);
                out.put_u32_le(*attempts);
                out.put_u64_le(*lease);
                out.put_u64_le(*deadline_ms);
                put_key_hash(&mut out, *key_hash);
                put_consumer(&mut out, consumer);
            }
            SubscriptionEvent::Delivered {
                subscription,
                offset,
                attempts,
                key_hash,
                consumer,
            } => {
                head(&mut out, DELIVERED, *subscription, *offset);
                out.put_u32_le(*attempts);
                put_key_hash(&mut out, *key_hash);
                put_named_origin(&mut out, consumer.as_ref());
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
        Bytes::from(out)
    }

    /// Decodes a control entry.
    pub fn decode(entry: &[u8]) -> Result<SubscriptionEvent, EventDecodeError> {
        let mut input = EntryReader::new(entry);
        let kind = input.u8()?;
        let subscription = input.u64()?;
        let event = match kind {
            ACKED | ACKED_BY => SubscriptionEvent::Acked {
                subscription,
                offset: input.u64()?,
                consumer: consumer_of(kind == ACKED_BY, &mut input)?,
            },
            NACKED | NACKED_BY => SubscriptionEvent::Nacked {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                due_ms: input.u64()?,
                key_hash: key_hash(&mut input)?,
                error: error(&mut input)?,
                consumer: consumer_of(kind == NACKED_BY, &mut input)?,
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
            LEASED | LEASED_BY => SubscriptionEvent::Leased {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                lease: input.u64()?,
                deadline_ms: input.u64()?,
                key_hash: key_hash(&mut input)?,
                consumer: consumer_of(kind == LEASED_BY, &mut input)?,
            },
            DELIVERED => SubscriptionEvent::Delivered {
                subscription,
                offset: input.u64()?,
                attempts: input.u32()?,
                key_hash: key_hash(&mut input)?,
                consumer: named_origin(&mut input)?,
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

fn head(out: &mut Vec<u8>, kind: u8, subscription: u64, offset: u64) {
    out.put_u8(kind);
    out.put_u64_le(subscription);
    out.put_u64_le(offset);
}

/// `consumer` unless it names nothing (an origin with no field set is no consumer).
fn named(consumer: Option<&Origin>) -> Option<&Origin> {
    consumer.filter(|c| **c != Origin::default())
}

/// The kind of an ack, nack or lease: its `_by` kind (`by`) when it names a `consumer`, else
/// its old kind (`old`).
fn by_kind(consumer: Option<&Origin>, by: u8, old: u8) -> u8 {
    if consumer.is_some() { by } else { old }
}

/// A delivery's consumer: always an origin, one with no field set when it names nobody.
fn put_named_origin(out: &mut Vec<u8>, consumer: Option<&Origin>) {
    match named(consumer) {
        Some(consumer) => put_origin(out, consumer),
        None => put_origin(out, &Origin::default()),
    }
}

/// A nack's error text: a presence flag, then its length and bytes, cut to
/// [`MAX_ERROR_LEN`] ([`truncated`]).
fn put_error(out: &mut Vec<u8>, error: Option<&str>) {
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

/// The consumer at the end of a `_by` kind; nothing for the old kinds.
fn put_consumer(out: &mut Vec<u8>, consumer: Option<&Origin>) {
    if let Some(consumer) = consumer {
        put_origin(out, consumer);
    }
}

fn put_key_hash(out: &mut Vec<u8>, key_hash: Option<u64>) {
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

/// The consumer of an ack, nack or lease: after the old body for a `_by` kind (`by`), where
/// it names someone; none for the old kinds.
fn consumer_of(by: bool, input: &mut EntryReader<'_>) -> Result<Option<Origin>, EventDecodeError> {
    if !by {
        return Ok(None);
    }
    match named_origin(input)? {
        Some(consumer) => Ok(Some(consumer)),
        None => Err(EventDecodeError::Malformed("a consumer with no field")),
    }
}

/// An origin in the record codec's encoding; none when it has no field set.
fn named_origin(input: &mut EntryReader<'_>) -> Result<Option<Origin>, EventDecodeError> {
    // The codec's reader owns its bytes: it gets a copy of the rest of the entry (a few
    // dozen bytes), and the entry's reader then steps over what it read.
    let mut cursor = Cursor::new(Bytes::copy_from_slice(input.rest()));
    let origin = get_origin_fields(&mut cursor).map_err(|e| match e {
        DecodeError::Truncated { .. } => EventDecodeError::Truncated,
        DecodeError::InvalidUtf8(_) => EventDecodeError::Malformed("the principal is not UTF-8"),
        _ => EventDecodeError::Malformed("the consumer does not decode"),
    })?;
    input.take(cursor.position())?;
    Ok((origin != Origin::default()).then_some(origin))
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
    use std::net::IpAddr;

    use super::*;

    fn consumer(principal: Option<&str>, address: Option<&str>, node: Option<u64>) -> Origin {
        Origin {
            principal: principal.map(str::to_owned),
            address: address.map(|a| a.parse::<IpAddr>().expect("an address")),
            node,
        }
    }

    /// Consumers as the gateway makes them: auth on or off, IPv4 or IPv6, a single node, a
    /// cluster node, a forward (no address).
    fn consumers() -> Vec<Option<Origin>> {
        vec![
            None,
            Some(consumer(None, Some("192.0.2.7"), None)),
            Some(consumer(Some("alice"), Some("2001:db8::9"), Some(3))),
            Some(consumer(Some("bob ü"), None, Some(u64::MAX))),
            Some(consumer(None, None, Some(0))),
        ]
    }

    /// Every kind, each that names a consumer once with each of [`consumers`].
    fn every_kind() -> Vec<SubscriptionEvent> {
        let mut events = vec![
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
        ];
        for consumer in consumers() {
            events.extend([
                SubscriptionEvent::Acked {
                    subscription: 7,
                    offset: 42,
                    consumer: consumer.clone(),
                },
                SubscriptionEvent::Nacked {
                    subscription: 7,
                    offset: 43,
                    attempts: 3,
                    due_ms: 1_700_000_000_000,
                    key_hash: Some(99),
                    error: Some("boom ü".into()),
                    consumer: consumer.clone(),
                },
                SubscriptionEvent::Nacked {
                    subscription: 7,
                    offset: 44,
                    attempts: 1,
                    due_ms: 0,
                    key_hash: None,
                    error: None,
                    consumer: consumer.clone(),
                },
                SubscriptionEvent::Leased {
                    subscription: 3,
                    offset: 9,
                    attempts: 2,
                    lease: u64::MAX,
                    deadline_ms: 1_700_000_030_000,
                    key_hash: Some(5),
                    consumer: consumer.clone(),
                },
                SubscriptionEvent::Delivered {
                    subscription: 3,
                    offset: 10,
                    attempts: 1,
                    key_hash: None,
                    consumer: consumer.clone(),
                },
                SubscriptionEvent::Delivered {
                    subscription: u64::MAX,
                    offset: u64::MAX,
                    attempts: u32::MAX,
                    key_hash: Some(u64::MAX),
                    consumer,
                },
            ]);
        }
        events
    }

    #[test]
    fn every_kind_of_event_round_trips() {
        for event in every_kind() {
            let entry = event.encode();
            assert_eq!(SubscriptionEvent::decode(&entry), Ok(event.clone()));
            assert!(crate::control::SUBSCRIPTION_KINDS.contains(&entry[0]));
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
            SubscriptionEvent::decode(&[12, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(EventDecodeError::UnknownKind(12))
        );
    }

    /// `kind | subscription 7 | offset 42`, the head of the vectors below.
    fn head_bytes(kind: u8) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend(7u64.to_le_bytes());
        bytes.extend(42u64.to_le_bytes());
        bytes
    }

    #[test]
    fn events_without_a_consumer_keep_the_bytes_of_the_old_kinds() {
        // Written by hand from the old table: logs from before consumers decode unchanged.
        let acked = head_bytes(1);
        let mut nacked = head_bytes(2);
        nacked.extend(3u32.to_le_bytes());
        nacked.extend(1_000u64.to_le_bytes());
        nacked.extend([1]);
        nacked.extend(99u64.to_le_bytes());
        nacked.extend([1, 2, 0, b'n', b'o']);
        let mut leased = head_bytes(7);
        leased.extend(2u32.to_le_bytes());
        leased.extend(5u64.to_le_bytes());
        leased.extend(6u64.to_le_bytes());
        leased.extend([0]);
        let mut redelivered = head_bytes(3);
        redelivered.extend(2u32.to_le_bytes());
        redelivered.extend([0]);
        let cases = [
            (
                acked,
                SubscriptionEvent::Acked {
                    subscription: 7,
                    offset: 42,
                    consumer: None,
                },
            ),
            (
                nacked,
                SubscriptionEvent::Nacked {
                    subscription: 7,
                    offset: 42,
                    attempts: 3,
                    due_ms: 1_000,
                    key_hash: Some(99),
                    error: Some("no".into()),
                    consumer: None,
                },
            ),
            (
                leased,
                SubscriptionEvent::Leased {
                    subscription: 7,
                    offset: 42,
                    attempts: 2,
                    lease: 5,
                    deadline_ms: 6,
                    key_hash: None,
                    consumer: None,
                },
            ),
            (
                redelivered,
                SubscriptionEvent::Redelivered {
                    subscription: 7,
                    offset: 42,
                    attempts: 2,
                    key_hash: None,
                },
            ),
        ];
        for (bytes, event) in cases {
            assert_eq!(SubscriptionEvent::decode(&bytes), Ok(event.clone()));
            assert_eq!(event.encode().as_ref(), bytes.as_slice(), "{event:?}");
        }
    }

    #[test]
    fn a_delivery_and_an_ack_by_a_consumer_have_fixed_bytes() {
        let alice = consumer(Some("alice"), Some("192.0.2.7"), Some(300));
        let delivered = SubscriptionEvent::Delivered {
            subscription: 7,
            offset: 42,
            attempts: 2,
            key_hash: Some(1),
            consumer: Some(alice.clone()),
        };
        let mut bytes = head_bytes(8);
        bytes.extend(2u32.to_le_bytes());
        bytes.extend([1]);
        bytes.extend(1u64.to_le_bytes());
        // fields: principal | IPv4 | node; "alice"; 192.0.2.7; 300 as a varint.
        let origin = [
            1 | 2 | 8,
            5,
            b'a',
            b'l',
            b'i',
            b'c',
            b'e',
            192,
            0,
            2,
            7,
            0xac,
            0x02,
        ];
        bytes.extend(origin);
        assert_eq!(delivered.encode().as_ref(), bytes.as_slice());
        assert_eq!(SubscriptionEvent::decode(&bytes), Ok(delivered));

        let anonymous = SubscriptionEvent::Delivered {
            subscription: 7,
            offset: 42,
            attempts: 1,
            key_hash: None,
            consumer: None,
        };
        let mut bytes = head_bytes(8);
        bytes.extend(1u32.to_le_bytes());
        bytes.extend([0, 0]);
        assert_eq!(anonymous.encode().as_ref(), bytes.as_slice());
        assert_eq!(SubscriptionEvent::decode(&bytes), Ok(anonymous));

        let acked = SubscriptionEvent::Acked {
            subscription: 7,
            offset: 42,
            consumer: Some(alice),
        };
        let mut bytes = head_bytes(9);
        bytes.extend(origin);
        assert_eq!(acked.encode().as_ref(), bytes.as_slice());
        assert_eq!(SubscriptionEvent::decode(&bytes), Ok(acked));
    }

    /// The bytes of the entries a delivery and its settle add to the log (each entry also
    /// takes a u32 length in its control batch): the message trace's cost per message.
    #[test]
    fn what_a_delivery_and_its_settle_cost() {
        let anonymous = consumer(None, Some("192.0.2.7"), None);
        let worker = consumer(Some("worker-1"), Some("192.0.2.7"), None);
        let forwarded = consumer(Some("worker-1"), None, Some(2));
        let delivered = |consumer: &Origin| SubscriptionEvent::Delivered {
            subscription: 1,
            offset: 1,
            attempts: 1,
            key_hash: None,
            consumer: Some(consumer.clone()),
        };
        let acked = |consumer: Option<&Origin>| SubscriptionEvent::Acked {
            subscription: 1,
            offset: 1,
            consumer: consumer.cloned(),
        };
        let nacked = |consumer: Option<&Origin>| SubscriptionEvent::Nacked {
            subscription: 1,
            offset: 1,
            attempts: 1,
            due_ms: 1,
            key_hash: None,
            error: None,
            consumer: consumer.cloned(),
        };
        let leased = |consumer: Option<&Origin>| SubscriptionEvent::Leased {
            subscription: 1,
            offset: 1,
            attempts: 1,
            lease: 1,
            deadline_ms: 1,
            key_hash: None,
            consumer: consumer.cloned(),
        };
        let len = |event: SubscriptionEvent| event.encode().len();
        // Auth off, IPv4: the fields byte and 4 address bytes.
        assert_eq!(len(delivered(&anonymous)), 27);
        assert_eq!(len(acked(None)), 17);
        assert_eq!(len(acked(Some(&anonymous))), 22);
        assert_eq!(len(nacked(None)), 31);
        assert_eq!(len(nacked(Some(&anonymous))), 36);
        // Auth on: a length byte and the principal ("worker-1": 8) more.
        assert_eq!(len(delivered(&worker)), 36);
        assert_eq!(len(acked(Some(&worker))), 31);
        assert_eq!(len(nacked(Some(&worker))), 45);
        // A cluster's lease: a node id under 128 takes one byte; a forwarded request's
        // consumer has no address.
        assert_eq!(len(leased(None)), 38);
        let mut clustered = worker.clone();
        clustered.node = Some(2);
        assert_eq!(len(leased(Some(&clustered))), 53);
        assert_eq!(len(leased(Some(&forwarded))), 49);
    }

    #[test]
    fn a_consumer_that_names_nothing_is_no_consumer() {
        let event = SubscriptionEvent::Acked {
            subscription: 7,
            offset: 42,
            consumer: Some(Origin::default()),
        };
        assert_eq!(event.encode().as_ref(), head_bytes(1).as_slice());
        assert_eq!(event.consumer(), None);
        // A `_by` kind always names someone.
        let mut empty = head_bytes(9);
        empty.push(0);
        assert_eq!(
            SubscriptionEvent::decode(&empty),
            Err(EventDecodeError::Malformed("a consumer with no field"))
        );
        // Unknown origin fields, and both address kinds at once.
        for fields in [16, 2 | 4] {
            let mut bad = head_bytes(9);
            bad.extend([fields, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            assert!(matches!(
                SubscriptionEvent::decode(&bad),
                Err(EventDecodeError::Malformed(_))
            ));
        }
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
            consumer: None,
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
