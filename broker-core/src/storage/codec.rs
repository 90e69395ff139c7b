//! The batch frame: how one batch of records is laid out on disk, and the checks that keep a
//! torn or corrupt frame from ever being served.
//!
//! ```text
//! frame  = body_len u32 | crc32c(body) u32 | body
//! body   = magic u8 | base_offset u64 | record_count u32 | leader_epoch u64
//!          | first_ts u64 | max_ts u64 | then, by magic:
//!   1 (messages): record{record_count}
//!   2 (control):  entry{record_count}, entry = u32 len, bytes
//!   3, 4, 5 (a Raft entry: messages, control, Raft's own): raft_index u64, then as 1, 2, 2
//! record = timestamp_ms u64 | flags u8 (bit 0: binary, bit 1: scheduled, bit 2: client id,
//!            bit 3: trace context, bit 4: origin, bit 5: origin as the record before)
//!          | id: u16 len, bytes
//!          | key: u8 present, [u32 len, bytes] | value: u32 len, bytes
//!          | headers: u16 count, {u16 len, bytes, u32 len, bytes}
//!          | tags: u16 count, {u16 len, bytes}
//!          | [trace context] | [origin]   (by flags, see `codec::extras`)
//! ```
//! A record without trace context or origin is byte for byte what it was before those bits.
//! A control batch carries durable state changes (acks, nacks, seeks…) as opaque entries that
//! the layer above encodes; it takes no message offsets: its `base_offset` is the offset the
//! next message batch will get, so users' offsets stay contiguous. Its timestamps are the time
//! it was written.
//!
//! In a replicated partition every frame is one Raft entry (see `codec::raft`): its
//! `leader_epoch` is the entry's term and `raft_index` its index in the Raft log. Magic 5
//! holds Raft's own entries (a blank entry of a new leader, a membership change) as one
//! opaque control-like entry; like a control batch it takes no message offsets.
//!
//! Every integer is little-endian. Decoding checks the CRC before it looks at the body, then
//! checks every length against what is left of the body, so a malformed frame is an error and
//! never a panic or an allocation sized by the disk.

use std::sync::Arc;

use bytes::Bytes;

use crate::error::{BrokerError, Result};
use crate::limits::MAX_FRAME_BYTES;
use crate::message::{Origin, Record};

/// Format version of a message batch.
pub(crate) const MAGIC: u8 = 1;
/// Format version of a control batch.
pub(crate) const CONTROL_MAGIC: u8 = 2;
/// Format version of a Raft entry holding messages.
pub(crate) const RAFT_MAGIC: u8 = 3;
/// Format version of a Raft entry holding control entries.
pub(crate) const RAFT_CONTROL_MAGIC: u8 = 4;
/// Format version of a Raft entry of Raft's own (blank, membership).
pub(crate) const RAFT_META_MAGIC: u8 = 5;
/// Bytes before the body: its length and its CRC.
pub(crate) const PREFIX_LEN: usize = 8;
/// Bytes of the fixed batch header at the start of the body.
pub(crate) const BATCH_HEADER_LEN: usize = 1 + 8 + 4 + 8 + 8 + 8;
const FLAG_BINARY: u8 = 1;
const FLAG_SCHEDULED: u8 = 2;
/// The producer chose the id and the topic remembers it (see [`Record::client_id`]); records
/// written before this bit existed simply lack it.
const FLAG_CLIENT_ID: u8 = 4;
/// Every flag bit a record may carry.
const KNOWN_FLAGS: u8 = FLAG_BINARY
    | FLAG_SCHEDULED
    | FLAG_CLIENT_ID
    | extras::FLAG_TRACE
    | extras::FLAG_ORIGIN
    | extras::FLAG_ORIGIN_AS_BEFORE;

/// What a batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BatchKind {
    /// Messages, one offset each.
    Messages,
    /// State changes, no offsets.
    Control,
    /// Raft's own entry (blank, membership), no offsets; only in replicated partitions.
    Meta,
}

/// The fixed fields of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Messages or control entries.
    pub kind: BatchKind,
    /// Offset of the first record (of a control batch: of the next message batch).
    pub base_offset: u64,
    /// Number of records (or control entries), at least one.
    pub record_count: u32,
    /// Leader epoch of the node that wrote the batch.
    pub leader_epoch: u64,
    /// Timestamp of the first record.
    pub first_ts: u64,
    /// Largest record timestamp in the batch.
    pub max_ts: u64,
    /// The frame's index in the partition's Raft log; none in an unreplicated partition.
    pub raft_index: Option<u64>,
}

impl BatchHeader {
    /// Message offsets the batch takes: its record count, none for a control batch.
    pub fn message_count(&self) -> u32 {
        match self.kind {
            BatchKind::Messages => self.record_count,
            BatchKind::Control | BatchKind::Meta => 0,
        }
    }

    /// One past the last offset of the batch (a control batch: its base offset).
    pub fn next_offset(&self) -> u64 {
        self.base_offset + u64::from(self.message_count())
    }
}

/// A decoded batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Batch {
    /// The fixed fields.
    pub header: BatchHeader,
    /// The records, `header.record_count` of them (none in a control batch).
    pub records: Vec<Record>,
    /// The control entries, `header.record_count` of them (none in a message batch).
    pub controls: Vec<Bytes>,
}

/// Why bytes are not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    /// The bytes end before a field does.
    #[error("{needed} bytes needed but only {available} left")]
    Truncated {
        /// Bytes the next field needs.
        needed: usize,
        /// Bytes left.
        available: usize,
    },
    /// The length prefix is outside what a frame can be.
    #[error("frame body length {len} is outside {min}..={max}")]
    BadLength {
        /// The length read.
        len: usize,
        /// Smallest valid body.
        min: usize,
        /// Largest valid body.
        max: usize,
    },
    /// The body does not match its CRC.
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The CRC in the prefix.
        stored: u32,
        /// The CRC of the body as read.
        computed: u32,
    },
    /// An unknown format version.
    #[error("unknown batch magic {0}")]
    BadMagic(u8),
    /// Record flags with unknown bits set.
    #[error("unknown record flags {0:#04x}")]
    BadFlags(u8),
    /// A string field is not UTF-8.
    #[error("{0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
    /// Bytes follow the last record.
    #[error("{0} bytes follow the last record")]
    TrailingBytes(usize),
    /// The header contradicts itself or the records.
    #[error("inconsistent batch header: {0}")]
    BadHeader(&'static str),
}

/// Encodes `records` as one frame whose first record gets `base_offset`.
pub(crate) fn encode_batch(
    base_offset: u64,
    leader_epoch: u64,
    records: &[Record],
) -> Result<(BatchHeader, Vec<u8>)> {
    let header = batch_header(base_offset, leader_epoch, records)?;
    let frame_len = records
        .iter()
        .map(encoded_len)
        .fold(PREFIX_LEN + BATCH_HEADER_LEN, usize::saturating_add);
    if frame_len > MAX_FRAME_BYTES {
        return Err(too_big(format!(
            "the batch frame would be {frame_len} bytes, over the limit of {MAX_FRAME_BYTES}"
        )));
    }
    let mut frame = Vec::with_capacity(frame_len);
    frame.extend_from_slice(&[0; PREFIX_LEN]);
    put_header(&mut frame, &header);
    put_records(&mut frame, records)?;
    seal(&mut frame)?;
    Ok((header, frame))
}

fn batch_header(base_offset: u64, leader_epoch: u64, records: &[Record]) -> Result<BatchHeader> {
    let first = records
        .first()
        .ok_or_else(|| BrokerError::invalid("records", "a batch needs at least one record"))?;
    let record_count = u32::try_from(records.len())
        .map_err(|_| too_big(format!("{} records do not fit one batch", records.len())))?;
    if base_offset.checked_add(u64::from(record_count)).is_none() {
        return Err(too_big(format!("offsets past {base_offset} overflow")));
    }
    let max_ts = records.iter().map(|r| r.timestamp_ms).fold(0, u64::max);
    Ok(BatchHeader {
        kind: BatchKind::Messages,
        base_offset,
        record_count,
        leader_epoch,
        first_ts: first.timestamp_ms,
        max_ts,
        raft_index: None,
    })
}

/// Encodes control `entries` as one frame placed before message offset `base_offset`, written
/// at `ts_ms`.
pub(crate) fn encode_control(
    base_offset: u64,
    leader_epoch: u64,
    ts_ms: u64,
    entries: &[Bytes],
) -> Result<(BatchHeader, Vec<u8>)> {
    let record_count = u32::try_from(entries.len())
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| too_big(format!("{} control entries in one batch", entries.len())))?;
    let frame_len = entries
        .iter()
        .map(|e| 4 + e.len())
        .fold(PREFIX_LEN + BATCH_HEADER_LEN, usize::saturating_add);
    if frame_len > MAX_FRAME_BYTES {
        return Err(too_big(format!(
            "the control frame would be {frame_len} bytes, over the limit of {MAX_FRAME_BYTES}"
        )));
    }
    let header = BatchHeader {
        kind: BatchKind::Control,
        base_offset,
        record_count,
        leader_epoch,
        first_ts: ts_ms,
        max_ts: ts_ms,
        raft_index: None,
    };
    let mut frame = Vec::with_capacity(frame_len);
    frame.extend_from_slice(&[0; PREFIX_LEN]);
    put_header(&mut frame, &header);
    for entry in entries {
        put_u32_bytes(&mut frame, entry, "control entry")?;
    }
    seal(&mut frame)?;
    Ok((header, frame))
}

/// Writes the body length and CRC into the prefix of a frame whose body is complete.
fn seal(frame: &mut [u8]) -> Result<()> {
    let body_len = u32::try_from(frame.len() - PREFIX_LEN)
        .map_err(|_| too_big("the batch frame does not fit a u32 length".into()))?;
    let crc = crc32c::crc32c(&frame[PREFIX_LEN..]);
    frame[..4].copy_from_slice(&body_len.to_le_bytes());
    frame[4..PREFIX_LEN].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

fn too_big(reason: String) -> BrokerError {
    BrokerError::invalid("records", reason)
}

fn encoded_len(record: &Record) -> usize {
    let key = record.key.as_ref().map_or(0, |k| 4 + k.len());
    let headers: usize = record
        .headers
        .iter()
        .map(|(k, v)| 6 + k.len() + v.len())
        .sum();
    let tags: usize = record.tags.iter().map(|t| 2 + t.len()).sum();
    8 + 1
        + 2
        + record.id.len()
        + 1
        + key
        + 4
        + record.value.len()
        + 2
        + headers
        + 2
        + tags
        + extras::encoded_len(record)
}

fn put_header(buf: &mut Vec<u8>, header: &BatchHeader) {
    buf.push(match (header.kind, header.raft_index) {
        (BatchKind::Messages, None) => MAGIC,
        (BatchKind::Control, None) => CONTROL_MAGIC,
        (BatchKind::Messages, Some(_)) => RAFT_MAGIC,
        (BatchKind::Control, Some(_)) => RAFT_CONTROL_MAGIC,
        (BatchKind::Meta, _) => RAFT_META_MAGIC,
    });
    buf.extend_from_slice(&header.base_offset.to_le_bytes());
    buf.extend_from_slice(&header.record_count.to_le_bytes());
    buf.extend_from_slice(&header.leader_epoch.to_le_bytes());
    buf.extend_from_slice(&header.first_ts.to_le_bytes());
    buf.extend_from_slice(&header.max_ts.to_le_bytes());
    if header.kind == BatchKind::Meta || header.raft_index.is_some() {
        buf.extend_from_slice(&header.raft_index.unwrap_or(0).to_le_bytes());
    }
}

/// Appends `records` in order, each after the one before (whose origin it may repeat).
fn put_records(buf: &mut Vec<u8>, records: &[Record]) -> Result<()> {
    let mut previous = None;
    for record in records {
        put_record(buf, record, previous)?;
        previous = Some(record);
    }
    Ok(())
}

fn put_record(buf: &mut Vec<u8>, record: &Record, previous: Option<&Record>) -> Result<()> {
    buf.extend_from_slice(&record.timestamp_ms.to_le_bytes());
    let binary = if record.binary { FLAG_BINARY } else { 0 };
    let scheduled = if record.scheduled { FLAG_SCHEDULED } else { 0 };
    let client_id = if record.client_id { FLAG_CLIENT_ID } else { 0 };
    let extras = extras::flags(record, previous);
    buf.push(binary | scheduled | client_id | extras);
    put_u16_bytes(buf, record.id.as_bytes(), "id")?;
    match &record.key {
        Some(key) => {
            buf.push(1);
            put_u32_bytes(buf, key.as_bytes(), "key")?;
        }
        None => buf.push(0),
    }
    put_u32_bytes(buf, &record.value, "value")?;
    put_count(buf, record.headers.len(), "headers")?;
    for (name, value) in &record.headers {
        put_u16_bytes(buf, name.as_bytes(), "header name")?;
        put_u32_bytes(buf, value.as_bytes(), "header value")?;
    }
    put_count(buf, record.tags.len(), "tags")?;
    for tag in &record.tags {
        put_u16_bytes(buf, tag.as_bytes(), "tag")?;
    }
    extras::put(buf, record, extras)
}

fn put_count(buf: &mut Vec<u8>, count: usize, what: &str) -> Result<()> {
    let count = u16::try_from(count)
        .map_err(|_| too_big(format!("{count} {what} do not fit the frame format")))?;
    buf.extend_from_slice(&count.to_le_bytes());
    Ok(())
}

fn put_u16_bytes(buf: &mut Vec<u8>, bytes: &[u8], what: &str) -> Result<()> {
    let len = u16::try_from(bytes.len())
        .map_err(|_| too_big(format!("a {what} of {} bytes is too long", bytes.len())))?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(bytes);
    Ok(())
}

fn put_u32_bytes(buf: &mut Vec<u8>, bytes: &[u8], what: &str) -> Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| too_big(format!("a {what} of {} bytes is too long", bytes.len())))?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(bytes);
    Ok(())
}

/// Reads a frame prefix: the body length (checked against the frame limits) and the stored CRC.
pub(crate) fn parse_prefix(prefix: [u8; PREFIX_LEN]) -> Result<(usize, u32), DecodeError> {
    let [l0, l1, l2, l3, c0, c1, c2, c3] = prefix;
    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    let max = MAX_FRAME_BYTES - PREFIX_LEN;
    if !(BATCH_HEADER_LEN..=max).contains(&len) {
        return Err(DecodeError::BadLength {
            len,
            min: BATCH_HEADER_LEN,
            max,
        });
    }
    Ok((len, u32::from_le_bytes([c0, c1, c2, c3])))
}

/// Decodes one whole frame (prefix and body, nothing more), checking its CRC first.
pub(crate) fn decode_frame(frame: Bytes) -> Result<Batch, DecodeError> {
    decode_body(checked_body(frame)?)
}

/// The body of one whole frame (prefix and body, nothing more) once its length and CRC check.
fn checked_body(frame: Bytes) -> Result<Bytes, DecodeError> {
    let mut cursor = Cursor { buf: frame, pos: 0 };
    let (len, stored) = parse_prefix(cursor.array()?)?;
    if cursor.remaining() > len {
        return Err(DecodeError::TrailingBytes(cursor.remaining() - len));
    }
    let body = cursor.take(len)?;
    let computed = crc32c::crc32c(&body);
    if computed != stored {
        return Err(DecodeError::CrcMismatch { stored, computed });
    }
    Ok(body)
}

fn decode_body(body: Bytes) -> Result<Batch, DecodeError> {
    let mut cursor = Cursor { buf: body, pos: 0 };
    let header = decode_header(&mut cursor)?;
    if header.kind != BatchKind::Messages {
        let mut controls = Vec::new();
        for _ in 0..header.record_count {
            let len = cursor.u32_len()?;
            controls.push(cursor.take(len)?);
        }
        if cursor.remaining() != 0 {
            return Err(DecodeError::TrailingBytes(cursor.remaining()));
        }
        return Ok(Batch {
            header,
            records: Vec::new(),
            controls,
        });
    }
    let mut records: Vec<Record> = Vec::new();
    for _ in 0..header.record_count {
        let previous = records.last().and_then(|r| r.origin.as_ref());
        let record = decode_record(&mut cursor, previous)?;
        records.push(record);
    }
    if cursor.remaining() != 0 {
        return Err(DecodeError::TrailingBytes(cursor.remaining()));
    }
    let max_ts = records.iter().map(|r| r.timestamp_ms).fold(0, u64::max);
    if records.first().map(|r| r.timestamp_ms) != Some(header.first_ts) || max_ts != header.max_ts {
        return Err(DecodeError::BadHeader(
            "timestamps do not match the records",
        ));
    }
    Ok(Batch {
        header,
        records,
        controls: Vec::new(),
    })
}

fn decode_header(cursor: &mut Cursor) -> Result<BatchHeader, DecodeError> {
    let magic = cursor.u8()?;
    let kind = match magic {
        MAGIC | RAFT_MAGIC => BatchKind::Messages,
        CONTROL_MAGIC | RAFT_CONTROL_MAGIC => BatchKind::Control,
        RAFT_META_MAGIC => BatchKind::Meta,
        magic => return Err(DecodeError::BadMagic(magic)),
    };
    let mut header = BatchHeader {
        kind,
        base_offset: cursor.u64()?,
        record_count: cursor.u32()?,
        leader_epoch: cursor.u64()?,
        first_ts: cursor.u64()?,
        max_ts: cursor.u64()?,
        raft_index: None,
    };
    if magic >= RAFT_MAGIC {
        header.raft_index = Some(cursor.u64()?);
    }
    if header.record_count == 0 {
        return Err(DecodeError::BadHeader("a batch has no records"));
    }
    if header
        .base_offset
        .checked_add(u64::from(header.record_count))
        .is_none()
    {
        return Err(DecodeError::BadHeader("offsets overflow"));
    }
    Ok(header)
}

fn decode_record(
    cursor: &mut Cursor,
    previous_origin: Option<&Arc<Origin>>,
) -> Result<Record, DecodeError> {
    let timestamp_ms = cursor.u64()?;
    let flags = cursor.u8()?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(DecodeError::BadFlags(flags));
    }
    let id_len = cursor.u16()?.into();
    let id = cursor.string(id_len, "id")?;
    let key = match cursor.u8()? {
        0 => None,
        _ => {
            let len = cursor.u32_len()?;
            Some(cursor.string(len, "key")?)
        }
    };
    let value_len = cursor.u32_len()?;
    let value = cursor.take(value_len)?;
    let mut headers = Vec::new();
    for _ in 0..cursor.u16()? {
        let name_len = cursor.u16()?.into();
        let name = cursor.string(name_len, "header name")?;
        let value_len = cursor.u32_len()?;
        headers.push((name, cursor.string(value_len, "header value")?));
    }
    let mut tags = Vec::new();
    for _ in 0..cursor.u16()? {
        let len = cursor.u16()?.into();
        tags.push(cursor.string(len, "tag")?);
    }
    let trace = extras::get_trace(cursor, flags)?;
    let origin = extras::get_origin(cursor, flags, previous_origin)?;
    Ok(Record {
        id,
        timestamp_ms,
        key,
        value,
        binary: flags & FLAG_BINARY != 0,
        scheduled: flags & FLAG_SCHEDULED != 0,
        client_id: flags & FLAG_CLIENT_ID != 0,
        headers,
        tags,
        trace,
        origin,
    })
}

/// Reads fields off a buffer, refusing any length longer than what is left.
pub(crate) struct Cursor {
    buf: Bytes,
    pos: usize,
}

impl Cursor {
    /// A reader at the start of `buf` (for an origin outside a frame: a subscription event's
    /// consumer).
    pub(crate) fn new(buf: Bytes) -> Cursor {
        Cursor { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, len: usize) -> Result<Bytes, DecodeError> {
        if len > self.remaining() {
            return Err(DecodeError::Truncated {
                needed: len,
                available: self.remaining(),
            });
        }
        let bytes = self.buf.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(bytes)
    }

    /// The next `len` bytes, borrowed: fixed-width fields and strings are copied out of the
    /// frame, so they need no `Bytes` handle (whose clone and drop are atomic operations on
    /// the one count every value of the frame shares).
    fn slice(&mut self, len: usize) -> Result<&[u8], DecodeError> {
        let available = self.remaining();
        if len > available {
            return Err(DecodeError::Truncated {
                needed: len,
                available,
            });
        }
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.slice(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u32_len(&mut self) -> Result<usize, DecodeError> {
        Ok(self.u32()? as usize)
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn string(&mut self, len: usize, field: &'static str) -> Result<String, DecodeError> {
        let bytes = self.slice(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::InvalidUtf8(field))
    }
}

pub(crate) mod extras;
pub(crate) mod marks;
pub(crate) mod raft;
#[cfg(test)]
mod tests;
