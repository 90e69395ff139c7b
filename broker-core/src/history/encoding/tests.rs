use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::history::MAX_MINUTE;
use crate::history::record::{SubscriptionMinute, TopicMinute};

fn subscription_record() -> impl Strategy<Value = SubscriptionMinute> {
    let gauge = (any::<u64>(), any::<u64>()).prop_map(|(a, b)| GaugeMinute {
        last: a.min(b),
        max: a.max(b),
    });
    (0..=MAX_MINUTE, any::<[u64; 4]>(), [gauge.clone(), gauge]).prop_map(
        |(minute, counters, gauges)| MinuteRecord {
            minute,
            counters,
            gauges,
        },
    )
}

/// `body` with its checksum appended, as a writer would: valid bytes of any content.
fn sealed(mut body: Vec<u8>) -> Vec<u8> {
    let checksum = crc32c::crc32c(&body);
    body.extend_from_slice(&checksum.to_le_bytes());
    body
}

#[test]
fn a_topic_record_is_laid_out_little_endian_with_its_version_first_and_checksum_last() {
    let record = TopicMinute {
        minute: 0x0102,
        counters: [1, 2, 3, 4, 0x0A0B],
        gauges: [GaugeMinute {
            last: 5,
            max: 0x0C0D,
        }],
    };
    let bytes = record.encode();
    assert_eq!(bytes.len(), TopicMinute::ENCODED_LEN);
    assert_eq!(
        (TopicMinute::ENCODED_LEN, SubscriptionMinute::ENCODED_LEN),
        (69, 77)
    );
    assert_eq!(bytes[0], RECORD_VERSION);
    assert_eq!(bytes[1..9], [0x02, 0x01, 0, 0, 0, 0, 0, 0]);
    assert_eq!(bytes[41..49], [0x0B, 0x0A, 0, 0, 0, 0, 0, 0]);
    assert_eq!(bytes[49..57], [5, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(bytes[57..65], [0x0D, 0x0C, 0, 0, 0, 0, 0, 0]);
    assert_eq!(bytes[65..], crc32c::crc32c(&bytes[..65]).to_le_bytes());
    assert_eq!(TopicMinute::decode(&bytes), Ok(record));
}

#[test]
fn a_version_one_record_is_not_read() {
    let mut bytes = TopicMinute::starting(7, [0]).encode();
    bytes[0] = 1;
    let checksum = crc32c::crc32c(&bytes[..TopicMinute::ENCODED_LEN - CHECKSUM_LEN]);
    bytes[TopicMinute::ENCODED_LEN - CHECKSUM_LEN..].copy_from_slice(&checksum.to_le_bytes());
    assert_eq!(
        TopicMinute::decode(&bytes),
        Err(HistoryError::RecordVersion {
            found: 1,
            expected: RECORD_VERSION
        })
    );
}

#[test]
fn a_region_never_written_reads_as_version_zero() {
    let zeros = [0; SubscriptionMinute::ENCODED_LEN];
    assert_eq!(
        SubscriptionMinute::decode(&zeros),
        Err(HistoryError::RecordVersion {
            found: 0,
            expected: RECORD_VERSION
        })
    );
}

#[test]
fn a_record_one_byte_short_or_long_is_refused_by_its_length() {
    let bytes = TopicMinute::starting(7, [0]).encode();
    for len in [bytes.len() - 1, bytes.len() + 1, 0] {
        let mut resized = bytes.clone();
        resized.resize(len, 0);
        assert_eq!(
            TopicMinute::decode(&resized),
            Err(HistoryError::RecordLength {
                len,
                expected: TopicMinute::ENCODED_LEN
            })
        );
    }
    assert_eq!(
        SubscriptionMinute::decode(&bytes),
        Err(HistoryError::RecordLength {
            len: 69,
            expected: 77
        }),
        "a topic record is not a subscription's"
    );
}

#[test]
fn a_write_torn_after_the_figures_fails_the_checksum() {
    let bytes = SubscriptionMinute::starting(9, [5, 6]).encode();
    let mut torn = bytes.clone();
    torn[SubscriptionMinute::ENCODED_LEN - CHECKSUM_LEN..].fill(0);
    assert!(matches!(
        SubscriptionMinute::decode(&torn),
        Err(HistoryError::RecordChecksum { stored: 0, .. })
    ));
}

#[test]
fn a_checksummed_record_that_breaks_an_invariant_is_refused() {
    let mut body = vec![RECORD_VERSION];
    for word in [3_u64, 0, 0, 0, 0, 7, 6, 0, 0] {
        body.extend_from_slice(&word.to_le_bytes());
    }
    assert_eq!(
        SubscriptionMinute::decode(&sealed(body)),
        Err(HistoryError::RecordInconsistent {
            reason: "a gauge's last value is above its largest"
        })
    );
    let mut body = vec![RECORD_VERSION];
    for word in [MAX_MINUTE + 1, 0, 0, 0, 0, 0, 0, 0] {
        body.extend_from_slice(&word.to_le_bytes());
    }
    assert!(matches!(
        TopicMinute::decode(&sealed(body)),
        Err(HistoryError::RecordInconsistent { .. })
    ));
}

proptest! {
    #[test]
    fn a_record_decodes_to_itself(record in subscription_record()) {
        let bytes = record.encode();
        prop_assert_eq!(bytes.len(), SubscriptionMinute::ENCODED_LEN);
        prop_assert_eq!(SubscriptionMinute::decode(&bytes), Ok(record));
    }

    #[test]
    fn any_changed_byte_is_detected(
        record in subscription_record(),
        at in 0..SubscriptionMinute::ENCODED_LEN,
        flip in 1_u8..=255,
    ) {
        let mut bytes = record.encode();
        bytes[at] ^= flip;
        prop_assert!(SubscriptionMinute::decode(&bytes).is_err());
    }

    #[test]
    fn garbage_never_panics_and_decodes_only_to_a_record_that_encodes_back_to_it(
        bytes in prop_oneof![
            vec(any::<u8>(), 0..160),
            vec(any::<u8>(), SubscriptionMinute::ENCODED_LEN - CHECKSUM_LEN).prop_map(sealed),
            vec(any::<u8>(), SubscriptionMinute::ENCODED_LEN - CHECKSUM_LEN - 1)
                .prop_map(|body| sealed([vec![RECORD_VERSION], body].concat())),
        ],
    ) {
        if let Ok(record) = SubscriptionMinute::decode(&bytes) {
            prop_assert_eq!(record.encode(), bytes);
        }
    }
}
