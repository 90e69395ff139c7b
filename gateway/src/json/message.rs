//! Message replies written by hand, straight from the broker's records: the receive reply,
//! one SSE message, and the offset-read page.
//!
//! They are byte for byte what `serde_json` makes of the derived DTOs
//! ([`ReceiveResponse`](crate::api::consume::ReceiveResponse),
//! [`ReceivedMessage`](crate::api::consume::ReceivedMessage),
//! [`PartitionPage`](crate::api::partitions::PartitionPage)), which stay the schema and the
//! test oracle. Writing them directly skips the copy of every value, id and header into a
//! [`LogMessage`](crate::api::partitions::LogMessage), the `BTreeMap` of headers, the map
//! path of `#[serde(flatten)]`, and the regrowth of a buffer that starts small: the output is
//! sized once from the records, which are already in memory (no length is taken on trust).

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use broker_core::StoredRecord;
use broker_core::broker::{Delivery, PartitionRead};
use bytes::Bytes;

use crate::json::payload::text_value;
use crate::json::text::{write_null, write_str, write_u32, write_u64};

/// The `content-type` of the replies, the one axum's `Json` sets.
const JSON_CONTENT_TYPE: &str = "application/json";
/// Bytes of one received message besides its strings: the field names, the punctuation, the
/// widest numbers and `null` for the key come to 197 with the comma after it. With it the
/// estimate of a reply without escapes is never short, so the buffer is allocated once.
const MESSAGE_OVERHEAD_BYTES: usize = 200;
/// Bytes a header adds besides its name and value: `"":""` and a comma.
const HEADER_OVERHEAD_BYTES: usize = 6;
/// Bytes a tag adds besides its text: `""` and a comma.
const TAG_OVERHEAD_BYTES: usize = 3;
/// Bytes a trace context adds besides its two strings: `,"traceparent":""` (17) and
/// `,"tracestate":""` (16).
const TRACE_OVERHEAD_BYTES: usize = 33;
/// Bytes of a reply's frame around its messages: `{"messages":[`, `]}` and, for a page, the
/// three widest offsets with their names (120 in all).
const FRAME_OVERHEAD_BYTES: usize = 128;

/// A 200 reply with `body`, and the `content-type` axum's `Json` sets.
pub(crate) fn json_response(body: Vec<u8>) -> Response {
    let content_type = HeaderValue::from_static(JSON_CONTENT_TYPE);
    ([(header::CONTENT_TYPE, content_type)], Bytes::from(body)).into_response()
}

/// One leased message as the writers read it: a [`Delivery`]'s parts, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeliveryParts<'a> {
    /// Acks, nacks or extends this delivery.
    pub receipt: &'a str,
    /// The partition it came from.
    pub partition: u32,
    /// 1 for the first delivery, one more per redelivery.
    pub delivery_attempt: u32,
    /// The record and its offset.
    pub message: &'a StoredRecord,
}

impl<'a> From<&'a Delivery> for DeliveryParts<'a> {
    fn from(delivery: &'a Delivery) -> Self {
        DeliveryParts {
            receipt: &delivery.receipt,
            partition: delivery.partition,
            delivery_attempt: delivery.delivery_attempt,
            message: &delivery.message,
        }
    }
}

/// The body of a receive reply, `{"messages":[…]}`.
pub(crate) fn receive_reply<'a, I>(messages: I) -> Vec<u8>
where
    I: IntoIterator<Item = DeliveryParts<'a>>,
    I::IntoIter: Clone,
{
    let messages = messages.into_iter();
    let estimate: usize = messages.clone().map(received_estimate).sum();
    let mut out = Vec::with_capacity(FRAME_OVERHEAD_BYTES + estimate);
    let mut headers = Vec::new();
    out.extend_from_slice(b"{\"messages\":[");
    for (index, message) in messages.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_received(&mut out, message, &mut headers);
    }
    out.extend_from_slice(b"]}");
    out
}

/// One received message, as an SSE message event carries it.
pub(crate) fn received_message(message: DeliveryParts<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(received_estimate(message));
    write_received(&mut out, message, &mut Vec::new());
    out
}

/// The body of an offset read, `{"messages":[…],"next_offset":…,…}`.
pub(crate) fn partition_page(read: &PartitionRead) -> Vec<u8> {
    let estimate: usize = read.messages.iter().map(record_estimate).sum();
    let mut out = Vec::with_capacity(FRAME_OVERHEAD_BYTES + estimate);
    let mut headers = Vec::new();
    out.extend_from_slice(b"{\"messages\":[");
    for (index, stored) in read.messages.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'{');
        write_record_fields(&mut out, stored, &mut headers);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"next_offset\":");
    write_u64(&mut out, read.next_offset);
    out.extend_from_slice(b",\"start_offset\":");
    write_u64(&mut out, read.start_offset);
    out.extend_from_slice(b",\"end_offset\":");
    write_u64(&mut out, read.end_offset);
    out.push(b'}');
    out
}

/// Appends one received message: its delivery fields, then its record's.
fn write_received<'a>(
    out: &mut Vec<u8>,
    message: DeliveryParts<'a>,
    headers: &mut Vec<&'a (String, String)>,
) {
    out.extend_from_slice(b"{\"receipt\":");
    write_str(out, message.receipt);
    out.extend_from_slice(b",\"partition\":");
    write_u32(out, message.partition);
    out.extend_from_slice(b",\"delivery_attempt\":");
    write_u32(out, message.delivery_attempt);
    out.push(b',');
    write_record_fields(out, message.message, headers);
    out.push(b'}');
}

/// Appends a record's fields, without braces, in the order `LogMessage` declares them: the
/// value as text when the record is text and UTF-8, else as `value_base64`.
fn write_record_fields<'a>(
    out: &mut Vec<u8>,
    stored: &'a StoredRecord,
    headers: &mut Vec<&'a (String, String)>,
) {
    let record = &stored.record;
    out.extend_from_slice(b"\"offset\":");
    write_u64(out, stored.offset);
    out.extend_from_slice(b",\"id\":");
    write_str(out, &record.id);
    out.extend_from_slice(b",\"key\":");
    match &record.key {
        Some(key) => write_str(out, key),
        None => write_null(out),
    }
    match text_value(record) {
        Some(text) => {
            out.extend_from_slice(b",\"value\":");
            write_str(out, text);
        }
        None => {
            out.extend_from_slice(b",\"value_base64\":\"");
            write_base64(out, &record.value);
            out.push(b'"');
        }
    }
    out.extend_from_slice(b",\"headers\":");
    write_headers(out, &record.headers, headers);
    out.extend_from_slice(b",\"tags\":[");
    for (index, tag) in record.tags.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(out, tag);
    }
    out.extend_from_slice(b"],\"publish_time_ms\":");
    write_u64(out, record.timestamp_ms);
    if let Some(trace) = &record.trace {
        out.extend_from_slice(b",\"traceparent\":");
        write_str(out, trace.traceparent());
        if let Some(state) = trace.tracestate() {
            out.extend_from_slice(b",\"tracestate\":");
            write_str(out, state);
        }
    }
}

/// Appends `value` in standard base64 (no character of which JSON escapes).
fn write_base64(out: &mut Vec<u8>, value: &[u8]) {
    let start = out.len();
    out.resize(start + base64_len(value.len()), 0);
    match STANDARD.encode_slice(value, &mut out[start..]) {
        Ok(written) => out.truncate(start + written),
        // Only a miscounted length gets here: encode the slow way rather than cut the value.
        Err(_) => {
            out.truncate(start);
            out.extend_from_slice(STANDARD.encode(value).as_bytes());
        }
    }
}

/// Appends headers as a JSON object sorted by name, a later header of a name winning, as
/// the `BTreeMap` of [`headers_map`](crate::json::payload::headers_map) serializes. `scratch` is
/// reused across records so that sorting allocates once per reply.
fn write_headers<'a>(
    out: &mut Vec<u8>,
    headers: &'a [(String, String)],
    scratch: &mut Vec<&'a (String, String)>,
) {
    scratch.clear();
    scratch.extend(headers);
    scratch.sort_by(|a, b| a.0.cmp(&b.0));
    out.push(b'{');
    let mut first = true;
    for (index, (name, value)) in scratch.iter().copied().enumerate() {
        let overridden = scratch
            .get(index + 1)
            .is_some_and(|(next_name, _)| next_name == name);
        if overridden {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(out, name);
        out.push(b':');
        write_str(out, value);
    }
    out.push(b'}');
}

/// Bytes one received message takes when nothing in it is escaped.
fn received_estimate(message: DeliveryParts<'_>) -> usize {
    message.receipt.len() + record_estimate(message.message)
}

/// Bytes one record takes when nothing in it is escaped.
fn record_estimate(stored: &StoredRecord) -> usize {
    let record = &stored.record;
    let value = if record.binary {
        base64_len(record.value.len())
    } else {
        record.value.len()
    };
    let headers: usize = record
        .headers
        .iter()
        .map(|(name, value)| HEADER_OVERHEAD_BYTES + name.len() + value.len())
        .sum();
    let tags: usize = record
        .tags
        .iter()
        .map(|tag| TAG_OVERHEAD_BYTES + tag.len())
        .sum();
    let key = record.key.as_ref().map_or(0, String::len);
    let trace = record
        .trace
        .as_ref()
        .map_or(0, |t| TRACE_OVERHEAD_BYTES + t.len());
    MESSAGE_OVERHEAD_BYTES + record.id.len() + key + value + headers + tags + trace
}

/// The length of `len` bytes in padded base64.
fn base64_len(len: usize) -> usize {
    len.div_ceil(3) * 4
}

#[cfg(test)]
mod tests;
