//! The hand-written replies against `serde_json` on the derived DTOs, over arbitrary records.

use broker_core::{Record, StoredRecord, TraceContext};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::api::consume::{ReceiveResponse, ReceivedMessage};
use crate::api::partitions::{LogMessage, PartitionPage};

/// A delivery as the strategies make it: receipt, partition, attempt, record.
type OwnedDelivery = (String, u32, u32, StoredRecord);

fn parts(delivery: &OwnedDelivery) -> DeliveryParts<'_> {
    DeliveryParts {
        receipt: &delivery.0,
        partition: delivery.1,
        delivery_attempt: delivery.2,
        message: &delivery.3,
    }
}

/// The old way: a `LogMessage` per record, serialized by serde.
fn oracle_message(delivery: &OwnedDelivery) -> ReceivedMessage {
    ReceivedMessage {
        receipt: delivery.0.clone(),
        partition: delivery.1,
        delivery_attempt: delivery.2,
        message: LogMessage::from(delivery.3.clone()),
    }
}

fn oracle_reply(deliveries: &[OwnedDelivery]) -> Vec<u8> {
    let messages = deliveries.iter().map(oracle_message).collect();
    serde_json::to_vec(&ReceiveResponse { messages }).expect("serializes")
}

fn oracle_page(read: &PartitionRead) -> Vec<u8> {
    serde_json::to_vec(&PartitionPage {
        messages: read.messages.iter().cloned().map(Into::into).collect(),
        next_offset: read.next_offset,
        start_offset: read.start_offset,
        end_offset: read.end_offset,
    })
    .expect("serializes")
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "(?s).{0,24}",
        "[\\x00-\\x20\"\\\\/\\x7f a-zé日🦀\u{2028}]{0,24}",
        "[a-z]{8,40}",
    ]
}

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[abAB]{0,2}",
        1 => text(),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        text().prop_map(String::into_bytes),
        vec(any::<u8>(), 0..40),
        (text(), any::<u8>()).prop_map(|(text, byte)| {
            let mut bytes = text.into_bytes();
            bytes.push(0x80 | byte);
            bytes
        }),
    ]
}

prop_compose! {
    fn stored()(
        offset in any::<u64>(),
        leader_epoch in any::<u64>(),
        id in text(),
        timestamp_ms in any::<u64>(),
        key in proptest::option::of(text()),
        value in value(),
        binary in any::<bool>(),
        client_id in any::<bool>(),
        headers in vec((header_name(), text()), 0..6),
        tags in vec(text(), 0..4),
        trace in proptest::option::of(trace()),
    ) -> StoredRecord {
        StoredRecord {
            offset,
            leader_epoch,
            record: Record {
                id,
                timestamp_ms,
                key,
                value: Bytes::from(value),
                binary,
                scheduled: false,
                client_id,
                headers,
                tags,
                trace,
                origin: None,
            },
        }
    }
}

/// A valid trace context: random ids and flags, and maybe a tracestate of 1 to 3 members.
fn trace() -> impl Strategy<Value = TraceContext> {
    (
        "[0-9a-f]{31}[1-9a-f]",
        "[1-9a-f][0-9a-f]{15}",
        "[0-9a-f]{2}",
        proptest::option::of(
            r#"[a-z]{1,8}=[a-zA-Z0-9_*/@"\\-]{1,16}(,[a-z]{1,8}=[a-zA-Z0-9_*/@"\\-]{1,16}){0,2}"#,
        ),
    )
        .prop_map(|(trace_id, parent_id, flags, state)| {
            let parent = format!("00-{trace_id}-{parent_id}-{flags}");
            TraceContext::parse(&parent, state.as_deref()).expect("a valid trace context")
        })
}

fn delivery() -> impl Strategy<Value = OwnedDelivery> {
    (text(), any::<u32>(), any::<u32>(), stored())
}

fn no_escapes(delivery: &OwnedDelivery) -> bool {
    let record = &delivery.3.record;
    let clean = |s: &str| {
        !s.bytes()
            .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\')
    };
    let value_clean = record.binary || std::str::from_utf8(&record.value).is_ok_and(clean);
    clean(&delivery.0)
        && clean(&record.id)
        && record.key.as_deref().is_none_or(clean)
        && value_clean
        && record
            .headers
            .iter()
            .all(|(name, value)| clean(name) && clean(value))
        && record.tags.iter().all(|tag| clean(tag))
        && record
            .trace
            .as_ref()
            .is_none_or(|t| t.tracestate().is_none_or(clean))
}

/// The bytes as text, for readable failures; the replies are always UTF-8.
fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("a reply is UTF-8")
}

fn empty_record(offset: u64, timestamp_ms: u64, binary: bool) -> StoredRecord {
    StoredRecord {
        offset,
        leader_epoch: 0,
        record: Record {
            id: String::new(),
            timestamp_ms,
            key: None,
            value: Bytes::new(),
            binary,
            scheduled: false,
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        },
    }
}

proptest! {
    #[test]
    fn a_receive_reply_is_byte_for_byte_what_serde_makes_of_receive_response(
        deliveries in vec(delivery(), 0..6),
    ) {
        let reply = receive_reply(deliveries.iter().map(parts));
        prop_assert_eq!(
            utf8(reply),
            utf8(oracle_reply(&deliveries))
        );
    }

    #[test]
    fn one_sse_message_is_byte_for_byte_what_serde_makes_of_received_message(
        delivery in delivery(),
    ) {
        let expected = serde_json::to_vec(&oracle_message(&delivery)).expect("serializes");
        prop_assert_eq!(
            utf8(received_message(parts(&delivery))),
            utf8(expected)
        );
    }

    #[test]
    fn a_partition_page_is_byte_for_byte_what_serde_makes_of_partition_page(
        messages in vec(stored(), 0..6),
        next_offset in any::<u64>(),
        start_offset in any::<u64>(),
        end_offset in any::<u64>(),
    ) {
        let read = PartitionRead { messages, next_offset, start_offset, end_offset };
        prop_assert_eq!(
            utf8(partition_page(&read)),
            utf8(oracle_page(&read))
        );
    }

    #[test]
    fn a_reply_without_escapes_fits_the_size_estimated_for_it(
        deliveries in vec(delivery(), 0..6),
    ) {
        let estimate: usize = deliveries.iter().map(|d| received_estimate(parts(d))).sum();
        let reply = receive_reply(deliveries.iter().map(parts));
        if deliveries.iter().all(no_escapes) {
            prop_assert!(reply.len() <= FRAME_OVERHEAD_BYTES + estimate);
        }
    }
}

#[test]
fn the_message_overhead_covers_a_message_with_empty_strings_and_the_widest_numbers() {
    for binary in [false, true] {
        let stored = empty_record(u64::MAX, u64::MAX, binary);
        let delivery = (String::new(), u32::MAX, u32::MAX, stored);
        let comma = 1;
        assert!(received_message(parts(&delivery)).len() + comma <= MESSAGE_OVERHEAD_BYTES);
    }
}

#[test]
fn the_frame_overhead_covers_an_empty_page_with_the_widest_offsets() {
    let read = PartitionRead {
        messages: Vec::new(),
        next_offset: u64::MAX,
        start_offset: u64::MAX,
        end_offset: u64::MAX,
    };
    assert!(partition_page(&read).len() <= FRAME_OVERHEAD_BYTES);
}

#[test]
fn duplicate_header_names_keep_the_last_value_in_name_order() {
    let mut stored = empty_record(3, 4, false);
    stored.record.value = Bytes::from_static(b"hi");
    stored.record.headers = [("b", "1"), ("a", "2"), ("b", "3"), ("a", "4"), ("c", "5")]
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .to_vec();
    let delivery = ("r".to_owned(), 1, 2, stored);
    let json = String::from_utf8(received_message(parts(&delivery))).expect("utf-8");
    assert_eq!(
        json,
        r#"{"receipt":"r","partition":1,"delivery_attempt":2,"offset":3,"id":"","key":null,"value":"hi","headers":{"a":"4","b":"3","c":"5"},"tags":[],"publish_time_ms":4}"#
    );
}

#[test]
fn a_text_record_that_is_not_utf8_goes_out_as_base64() {
    let mut stored = empty_record(0, 0, false);
    stored.record.value = Bytes::from_static(&[0xff, 0x00]);
    let delivery = ("r".to_owned(), 0, 1, stored);
    let json = String::from_utf8(received_message(parts(&delivery))).expect("utf-8");
    assert!(json.contains(r#","value_base64":"/wA=","#), "{json}");
    assert!(!json.contains(r#""value":"#), "{json}");
}

#[tokio::test]
async fn a_written_reply_has_the_status_headers_and_body_of_axums_json() {
    use http_body_util::BodyExt;

    let stored = empty_record(7, 8, true);
    let delivery = ("r".to_owned(), 0, 1, stored);
    let deliveries = [delivery];
    let ours = json_response(receive_reply(deliveries.iter().map(parts)));
    let messages = deliveries.iter().map(oracle_message).collect();
    let axums = axum::Json(ReceiveResponse { messages }).into_response();
    assert_eq!(ours.status(), axums.status());
    assert_eq!(ours.headers(), axums.headers());
    let ours = ours.into_body().collect().await.expect("body").to_bytes();
    let axums = axums.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(ours, axums);
}
