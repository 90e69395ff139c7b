//! Codec tests: round trips, and every way a frame can be damaged.

use super::*;
use crate::trace_context::TraceContext;

fn record(n: u64) -> Record {
    Record {
        id: format!("id-{n}"),
        timestamp_ms: 1_700_000_000_000 + n * 7 % 5,
        key: n.is_multiple_of(2).then(|| format!("key-{n}")),
        value: Bytes::from(vec![n as u8; (n as usize * 13) % 40]),
        binary: n.is_multiple_of(3),
        scheduled: n.is_multiple_of(5),
        client_id: n.is_multiple_of(4),
        headers: vec![("h".into(), format!("v{n}")), ("ü".into(), String::new())],
        tags: vec!["t1".into(), format!("tag-{n}")],
        trace: None,
        origin: None,
    }
}

fn sample() -> (BatchHeader, Vec<Record>, Vec<u8>) {
    let records: Vec<Record> = (0..5).map(record).collect();
    let (header, frame) = encode_batch(42, 3, &records).expect("encodes");
    (header, records, frame)
}

#[test]
fn a_batch_round_trips_through_its_frame() {
    let (header, records, frame) = sample();
    let batch = decode_frame(Bytes::from(frame)).expect("decodes");
    assert_eq!(batch.header, header);
    assert_eq!(batch.records, records);
    assert_eq!(header.base_offset, 42);
    assert_eq!(header.leader_epoch, 3);
    assert_eq!(header.next_offset(), 47);
    assert_eq!(header.first_ts, records[0].timestamp_ms);
}

#[test]
fn every_truncation_of_a_valid_frame_fails_to_decode() {
    let (_, _, frame) = sample();
    for cut in 0..frame.len() {
        let result = decode_frame(Bytes::copy_from_slice(&frame[..cut]));
        assert!(result.is_err(), "a frame cut at {cut} decoded");
    }
}

#[test]
fn every_flipped_byte_in_the_body_fails_the_crc() {
    let (_, _, frame) = sample();
    for at in PREFIX_LEN..frame.len() {
        let mut garbled = frame.clone();
        garbled[at] ^= 0x5a;
        let result = decode_frame(Bytes::from(garbled));
        assert!(
            matches!(result, Err(DecodeError::CrcMismatch { .. })),
            "flipping byte {at} gave {result:?}"
        );
    }
}

#[test]
fn a_flipped_crc_or_length_byte_fails_to_decode() {
    let (_, _, frame) = sample();
    for at in 0..PREFIX_LEN {
        let mut garbled = frame.clone();
        garbled[at] ^= 0x01;
        assert!(decode_frame(Bytes::from(garbled)).is_err(), "byte {at}");
    }
}

#[test]
fn trailing_bytes_after_a_frame_are_refused() {
    let (_, _, mut frame) = sample();
    frame.push(0);
    assert_eq!(
        decode_frame(Bytes::from(frame)),
        Err(DecodeError::TrailingBytes(1))
    );
}

#[test]
fn a_length_prefix_over_the_frame_limit_is_refused_before_reading_on() {
    let mut prefix = [0; PREFIX_LEN];
    prefix[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        parse_prefix(prefix),
        Err(DecodeError::BadLength { .. })
    ));
    let limit = (MAX_FRAME_BYTES - PREFIX_LEN) as u32;
    prefix[..4].copy_from_slice(&limit.to_le_bytes());
    assert!(parse_prefix(prefix).is_ok());
    prefix[..4].copy_from_slice(&(limit + 1).to_le_bytes());
    assert!(parse_prefix(prefix).is_err());
}

#[test]
fn a_body_with_valid_crc_but_lying_lengths_is_an_error_not_a_panic() {
    let (_, _, frame) = sample();
    let mut body = frame[PREFIX_LEN..].to_vec();
    let id_len_at = BATCH_HEADER_LEN + 8 + 1;
    body[id_len_at..id_len_at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    let mut forged = (body.len() as u32).to_le_bytes().to_vec();
    forged.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    forged.extend_from_slice(&body);
    assert!(decode_frame(Bytes::from(forged)).is_err());
}

#[test]
fn invalid_utf8_in_a_string_field_is_refused() {
    let mut bad = record(1);
    bad.id = "ab".into();
    let (_, frame) = encode_batch(0, 0, &[bad]).expect("encodes");
    let mut body = frame[PREFIX_LEN..].to_vec();
    let id_at = BATCH_HEADER_LEN + 8 + 1 + 2;
    body[id_at] = 0xff;
    let mut forged = frame[..4].to_vec();
    forged.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    forged.extend_from_slice(&body);
    assert_eq!(
        decode_frame(Bytes::from(forged)),
        Err(DecodeError::InvalidUtf8("id"))
    );
}

#[test]
fn an_empty_batch_and_an_oversized_batch_are_refused_at_encode() {
    assert!(encode_batch(0, 0, &[]).is_err());
    let mut big = record(0);
    big.value = Bytes::from(vec![0; MAX_FRAME_BYTES]);
    assert!(encode_batch(0, 0, &[big]).is_err());
    let mut long_id = record(0);
    long_id.id = "x".repeat(usize::from(u16::MAX) + 1);
    assert!(encode_batch(0, 0, &[long_id]).is_err());
}

#[test]
fn a_control_batch_round_trips_and_takes_no_offsets() {
    let entries = vec![
        Bytes::from_static(b"ack 1"),
        Bytes::new(),
        Bytes::from(vec![7; 300]),
    ];
    let (header, frame) = encode_control(42, 3, 1_234, &entries).expect("encodes");
    assert_eq!(header.kind, BatchKind::Control);
    assert_eq!((header.message_count(), header.next_offset()), (0, 42));
    let batch = decode_frame(Bytes::from(frame.clone())).expect("decodes");
    assert_eq!(batch.header, header);
    assert_eq!(batch.controls, entries);
    assert!(batch.records.is_empty());
    for cut in 0..frame.len() {
        assert!(decode_frame(Bytes::copy_from_slice(&frame[..cut])).is_err());
    }
    assert!(
        encode_control(0, 0, 0, &[]).is_err(),
        "an empty control batch"
    );
}

#[test]
fn a_raft_entry_frames_at_its_place_and_splits_back_into_the_same_body() {
    let records: Vec<Record> = (0..4).map(record).collect();
    let bodies = [
        raft::EntryBody::messages(&records).expect("messages"),
        raft::EntryBody::control(9, &[Bytes::from_static(b"ack"), Bytes::new()]).expect("control"),
        raft::EntryBody::meta(9, &Bytes::from_static(b"{}")).expect("meta"),
    ];
    for body in bodies {
        let (header, frame) = body.frame(3, 17, 40).expect("frames");
        assert_eq!(
            (header.raft_index, header.leader_epoch, header.base_offset),
            (Some(17), 3, 40)
        );
        let batch = decode_frame(Bytes::from(frame.clone())).expect("decodes as a batch");
        assert_eq!(batch.header, header);
        let (split_header, split_body) = raft::split_entry(Bytes::from(frame)).expect("splits");
        assert_eq!(split_header, header);
        assert_eq!(split_body, body);
        body.check().expect("a body of our own encoding checks");
    }
    let batch = decode_frame(Bytes::from(
        raft::EntryBody::messages(&records)
            .expect("messages")
            .frame(1, 1, 0)
            .expect("frames")
            .1,
    ))
    .expect("decodes");
    assert_eq!(batch.records, records);
    assert_eq!(
        raft::EntryBody::meta(1, &Bytes::from_static(b"m"))
            .expect("meta")
            .meta_bytes(),
        Some(Bytes::from_static(b"m"))
    );
}

#[test]
fn joined_bodies_are_the_entries_one_after_another() {
    let records: Vec<Record> = (0..7).map(record).collect();
    let parts = [&records[..2], &records[2..3], &records[3..]];
    let bodies: Vec<raft::EntryBody> = parts
        .iter()
        .map(|part| raft::EntryBody::messages(part).expect("messages"))
        .collect();
    let joined = raft::EntryBody::concat(&bodies).expect("joins");
    assert_eq!(
        joined,
        raft::EntryBody::messages(&records).expect("messages")
    );
    joined.check().expect("a joined body checks");
    let batch =
        decode_frame(Bytes::from(joined.frame(2, 5, 10).expect("frames").1)).expect("decodes");
    assert_eq!(batch.records, records);

    let acks = raft::EntryBody::control(9, &[Bytes::from_static(b"a1")]).expect("control");
    let more =
        raft::EntryBody::control(11, &[Bytes::from_static(b"a2"), Bytes::new()]).expect("control");
    let joined = raft::EntryBody::concat(&[acks.clone(), more]).expect("joins");
    assert_eq!(
        joined.control_entries().expect("entries"),
        vec![
            Bytes::from_static(b"a1"),
            Bytes::from_static(b"a2"),
            Bytes::new()
        ]
    );
    joined.check().expect("a joined control body checks");

    let meta = raft::EntryBody::meta(1, &Bytes::from_static(b"m")).expect("meta");
    for refused in [
        vec![],
        vec![bodies[0].clone(), acks],
        vec![meta.clone(), meta],
    ] {
        assert!(raft::EntryBody::concat(&refused).is_err());
    }
}

#[test]
fn an_unreplicated_frame_is_not_a_raft_entry() {
    let (_, _, frame) = sample();
    assert_eq!(
        raft::split_entry(Bytes::from(frame)),
        Err(DecodeError::BadHeader("not a Raft entry"))
    );
}

/// A frame of one record as the encoder wrote it before records could carry a trace context
/// or an origin (flags 0x04: client id; no bit above it).
const FRAME_BEFORE_TRACE: [u8; 86] = [
    0x4e, 0x00, 0x00, 0x00, 0x3d, 0x69, 0x16, 0xdb, 0x01, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x68, 0xe5,
    0xcf, 0x8b, 0x01, 0x00, 0x00, 0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, 0x00, 0x68, 0xe5,
    0xcf, 0x8b, 0x01, 0x00, 0x00, 0x04, 0x03, 0x00, 0x6d, 0x2d, 0x31, 0x01, 0x01, 0x00, 0x00, 0x00,
    0x6b, 0x02, 0x00, 0x00, 0x00, 0x68, 0x69, 0x01, 0x00, 0x01, 0x00, 0x68, 0x01, 0x00, 0x00, 0x00,
    0x76, 0x01, 0x00, 0x01, 0x00, 0x74,
];

fn record_before_trace() -> Record {
    Record {
        id: "m-1".into(),
        timestamp_ms: 1_700_000_000_000,
        key: Some("k".into()),
        value: Bytes::from_static(b"hi"),
        binary: false,
        scheduled: false,
        client_id: true,
        headers: vec![("h".into(), "v".into())],
        tags: vec!["t".into()],
        trace: None,
        origin: None,
    }
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn origin(principal: Option<&str>, address: &str, node: Option<u64>) -> Arc<Origin> {
    Arc::new(Origin {
        principal: principal.map(str::to_owned),
        address: Some(address.parse().expect("an address")),
        node,
    })
}

#[test]
fn a_frame_written_before_trace_context_decodes_as_before_and_is_written_the_same() {
    let batch = decode_frame(Bytes::from_static(&FRAME_BEFORE_TRACE)).expect("decodes");
    assert_eq!(batch.header.base_offset, 7);
    assert_eq!(batch.header.leader_epoch, 2);
    assert_eq!(batch.records, vec![record_before_trace()]);
    let (_, frame) = encode_batch(7, 2, &[record_before_trace()]).expect("encodes");
    assert_eq!(frame, FRAME_BEFORE_TRACE);
}

#[test]
fn trace_context_and_origin_round_trip_and_a_produce_stores_its_origin_once() {
    let client = origin(Some("alice"), "192.0.2.7", None);
    let records: Vec<Record> = (0..4)
        .map(|n| Record {
            trace: (n % 2 == 0).then(|| {
                TraceContext::parse(TRACEPARENT, (n == 0).then_some("rojo=00f067aa0ba902b7"))
                    .expect("valid")
            }),
            origin: Some(client.clone()),
            ..record(n)
        })
        .collect();
    let (_, frame) = encode_batch(0, 1, &records).expect("encodes");
    let decoded = decode_frame(Bytes::from(frame.clone()))
        .expect("decodes")
        .records;
    assert_eq!(decoded, records);
    let bare: Vec<Record> = records
        .iter()
        .map(|r| Record {
            trace: None,
            origin: None,
            ..r.clone()
        })
        .collect();
    let (_, bare_frame) = encode_batch(0, 1, &bare).expect("encodes");
    let trace_bytes = 2 * (1 + TRACEPARENT.len() + 2) + "rojo=00f067aa0ba902b7".len();
    let origin_bytes = 1 + 1 + "alice".len() + 4;
    assert_eq!(frame.len(), bare_frame.len() + trace_bytes + origin_bytes);
}

#[test]
fn every_kind_of_origin_round_trips_and_a_change_of_origin_is_stored_again() {
    let origins = [
        origin(None, "2001:db8::1", Some(300)),
        origin(Some(&"p".repeat(200)), "10.0.0.1", Some(u64::MAX)),
        Arc::new(Origin::default()),
        origin(Some("bob"), "::1", None),
    ];
    let records: Vec<Record> = (0..8)
        .map(|n| Record {
            origin: (n != 5).then(|| origins[n as usize / 2].clone()),
            ..record(n)
        })
        .collect();
    let (_, frame) = encode_batch(0, 1, &records).expect("encodes");
    assert_eq!(
        decode_frame(Bytes::from(frame)).expect("decodes").records,
        records
    );
}

#[test]
fn an_origin_as_before_on_a_frames_first_record_is_refused() {
    let mut body = Vec::new();
    put_header(
        &mut body,
        &batch_header(0, 1, &[record(1)]).expect("a header"),
    );
    let mut lone = Vec::new();
    put_record(&mut lone, &record(1), None).expect("encodes");
    lone[8] |= extras::FLAG_ORIGIN_AS_BEFORE;
    body.extend_from_slice(&lone);
    let mut frame = vec![0; PREFIX_LEN];
    frame.extend_from_slice(&body);
    seal(&mut frame).expect("seals");
    assert!(matches!(
        decode_frame(Bytes::from(frame)),
        Err(DecodeError::BadFlags(_))
    ));
}

#[test]
fn joined_raft_bodies_of_two_produces_keep_each_produces_origin() {
    let first: Vec<Record> = (0..3)
        .map(|n| Record {
            origin: Some(origin(Some("a"), "192.0.2.1", Some(1))),
            ..record(n)
        })
        .collect();
    let second: Vec<Record> = (3..5)
        .map(|n| Record {
            origin: Some(origin(Some("b"), "192.0.2.2", Some(2))),
            trace: TraceContext::parse(TRACEPARENT, None).ok(),
            ..record(n)
        })
        .collect();
    let bodies = [
        raft::EntryBody::messages(&first).expect("a body"),
        raft::EntryBody::messages(&second).expect("a body"),
    ];
    let joined = raft::EntryBody::concat(&bodies).expect("joins");
    let (_, frame) = joined.frame(1, 9, 0).expect("frames");
    let records = decode_frame(Bytes::from(frame)).expect("decodes").records;
    let expected: Vec<Record> = first.into_iter().chain(second).collect();
    assert_eq!(records, expected);
}
