//! Whether a message frame holds a record the derived tables of a partition read: one whose
//! id the producer chose (the dedup index learns it) or one moved out of the delay schedule
//! (the schedule forgets it). Every replica of a replicated topic that remembers ids replays
//! its whole log into those tables, and most frames hold neither: their records are walked by
//! their lengths, nothing copied or allocated, and only a frame with a marked record is
//! decoded.

use bytes::Bytes;

use super::{
    Batch, BatchKind, Cursor, DecodeError, FLAG_CLIENT_ID, FLAG_SCHEDULED, KNOWN_FLAGS,
    checked_body, decode_body, decode_header, extras,
};

/// The flag bits of a record the derived tables read.
const MARKS: u8 = FLAG_CLIENT_ID | FLAG_SCHEDULED;

/// One whole frame (prefix and body, nothing more), decoded when it holds a marked record or
/// is not a message frame; `None` when none of its records is marked. Checks its CRC first.
pub(crate) fn decode_frame_if_marked(frame: Bytes) -> Result<Option<Batch>, DecodeError> {
    let body = checked_body(frame)?;
    if !holds_marked(body.clone())? {
        return Ok(None);
    }
    decode_body(body).map(Some)
}

fn holds_marked(body: Bytes) -> Result<bool, DecodeError> {
    let mut cursor = Cursor::new(body);
    let header = decode_header(&mut cursor)?;
    if header.kind != BatchKind::Messages {
        return Ok(true);
    }
    for _ in 0..header.record_count {
        if step_over_record(&mut cursor)? & MARKS != 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Reads a record's flags and steps over the rest of it (not when it is marked: the whole
/// frame is decoded then); returns its flags.
fn step_over_record(cursor: &mut Cursor) -> Result<u8, DecodeError> {
    let _timestamp_ms = cursor.u64()?;
    let flags = cursor.u8()?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(DecodeError::BadFlags(flags));
    }
    if flags & MARKS != 0 {
        return Ok(flags);
    }
    let id_len = cursor.u16()?.into();
    cursor.slice(id_len)?;
    if cursor.u8()? != 0 {
        let key_len = cursor.u32_len()?;
        cursor.slice(key_len)?;
    }
    let value_len = cursor.u32_len()?;
    cursor.slice(value_len)?;
    for _ in 0..cursor.u16()? {
        let name_len = cursor.u16()?.into();
        cursor.slice(name_len)?;
        let value_len = cursor.u32_len()?;
        cursor.slice(value_len)?;
    }
    for _ in 0..cursor.u16()? {
        let tag_len = cursor.u16()?.into();
        cursor.slice(tag_len)?;
    }
    extras::step_over(cursor, flags)?;
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::message::{Origin, Record};
    use crate::storage::codec::{decode_frame, encode_batch};
    use crate::trace_context::TraceContext;

    /// A record unmarked, its optional parts present or not by `n`: key, headers, tags, trace
    /// context, origin (the same as the record before for some).
    fn unmarked(n: u64) -> Record {
        let origin = Arc::new(Origin {
            principal: n.is_multiple_of(2).then(|| format!("p{}", n % 3)),
            address: Some("127.0.0.1".parse().expect("address")),
            node: Some(n % 4),
        });
        Record {
            id: format!("id-{n}"),
            timestamp_ms: 1_700_000_000_000 + n,
            key: n.is_multiple_of(2).then(|| format!("key-{n}")),
            value: Bytes::from(vec![n as u8; (n as usize * 13) % 40]),
            binary: n.is_multiple_of(3),
            scheduled: false,
            client_id: false,
            headers: (0..n % 3)
                .map(|h| (format!("h{h}"), format!("v{n}")))
                .collect(),
            tags: (0..n % 2).map(|t| format!("tag-{t}")).collect(),
            trace: n.is_multiple_of(5).then(|| {
                TraceContext::stored(
                    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
                    n.is_multiple_of(10).then(|| "a=b".to_string()),
                )
            }),
            origin: (!n.is_multiple_of(7)).then_some(origin),
        }
    }

    fn frame(records: &[Record]) -> Bytes {
        let (_, frame) = encode_batch(40, 2, records).expect("encoded");
        Bytes::from(frame)
    }

    #[test]
    fn a_frame_without_a_marked_record_is_walked_to_its_end_and_not_decoded() {
        for len in 1..30 {
            let records: Vec<Record> = (0..len).map(unmarked).collect();
            assert_eq!(decode_frame_if_marked(frame(&records)), Ok(None), "{len}");
        }
    }

    #[test]
    fn a_frame_with_a_client_id_or_a_moved_delay_anywhere_is_decoded_whole() {
        for len in 1..12u64 {
            for at in 0..len {
                for scheduled in [false, true] {
                    let mut records: Vec<Record> = (0..len).map(unmarked).collect();
                    let marked = &mut records[at as usize];
                    marked.scheduled = scheduled;
                    marked.client_id = !scheduled;
                    let whole = decode_frame(frame(&records)).expect("decodes");
                    let decoded = decode_frame_if_marked(frame(&records)).expect("decodes");
                    assert_eq!(decoded, Some(whole), "{len} records, marked at {at}");
                }
            }
        }
    }

    #[test]
    fn a_damaged_or_truncated_frame_is_an_error_marked_or_not() {
        let records: Vec<Record> = (0..6).map(unmarked).collect();
        let whole = frame(&records);
        for at in super::super::PREFIX_LEN..whole.len() {
            let mut garbled = whole.to_vec();
            garbled[at] ^= 0x5a;
            let result = decode_frame_if_marked(Bytes::from(garbled));
            assert!(
                matches!(result, Err(DecodeError::CrcMismatch { .. })),
                "flipping byte {at} gave {result:?}"
            );
        }
        for cut in 0..whole.len() {
            assert!(
                decode_frame_if_marked(whole.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
    }
}
