//! Segment tests: file names, and the zeros written ahead of the frames.

use super::*;

#[test]
fn file_names_round_trip_and_strangers_are_ignored() {
    assert_eq!(Segment::file_name(42), "00000000000000000042.log");
    assert_eq!(
        Segment::parse_file_name(&Segment::file_name(u64::MAX)),
        Some(u64::MAX)
    );
    assert_eq!(Segment::parse_file_name("42.log"), None);
    assert_eq!(Segment::parse_file_name("0000000000000000004x.log"), None);
    assert_eq!(Segment::parse_file_name("00000000000000000042.idx"), None);
}

#[test]
fn zeros_ahead_are_seen_as_zeros_never_as_frames_and_trim_cuts_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let segment = Segment::create(dir.path(), 0).expect("create");
    let record = crate::message::Record {
        id: "m".into(),
        timestamp_ms: 1,
        key: None,
        value: Bytes::from_static(b"hello"),
        binary: false,
        scheduled: false,
        client_id: false,
        headers: Vec::new(),
        tags: Vec::new(),
        trace: None,
        origin: None,
    };
    let (_, frame) = codec::encode_batch(0, 1, &[record]).expect("encode");
    let end = frame.len() as u64;
    assert_eq!(segment.append(&frame).expect("append"), 0);
    assert!(segment.zero_ahead(end + 100_000).expect("zeros"));
    assert!(!segment.zero_ahead(end + 50).expect("nothing to add"));
    assert_eq!(segment.size(), end, "zeros are not frames");
    assert_eq!(segment.zeros_ahead(), 100_000);
    assert!(
        matches!(segment.scan_at(end), Ok(ScanStep::End)),
        "live: the frames end"
    );
    let reopened = Segment::open(segment.path().to_path_buf(), 0).expect("open");
    assert!(
        matches!(reopened.scan_at(end), Ok(ScanStep::Zeros)),
        "as a crash left it"
    );
    assert_eq!(
        segment.append(&frame).expect("append"),
        end,
        "over the zeros"
    );
    assert_eq!(segment.zeros_ahead(), 100_000 - end);
    segment.trim().expect("trim");
    let on_disk = std::fs::metadata(segment.path()).expect("metadata").len();
    assert_eq!(on_disk, 2 * end);
    assert!(matches!(segment.scan_at(2 * end), Ok(ScanStep::End)));
}
