//! The trace index against a model: every query of a builder and of its sealed run answers
//! what a plain list of the notes says, and the runs of a file survive a torn or damaged tail.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::run::{ENTRY_LEN, HEADER_LEN};
use super::*;

/// One note the follower makes.
#[derive(Debug, Clone)]
enum Note {
    /// A message with an id and maybe a key, from small alphabets so ids and keys repeat.
    Message { id: u8, key: Option<u8> },
    /// An event about the message `back` messages ago, in a frame `gap` bytes further on.
    Event { back: u8, gap: u8 },
}

fn note() -> impl Strategy<Value = Note> {
    prop_oneof![
        (0u8..12, proptest::option::of(0u8..4)).prop_map(|(id, key)| Note::Message { id, key }),
        (0u8..8, 0u8..3).prop_map(|(back, gap)| Note::Event { back, gap }),
    ]
}

/// The model: the notes as plain lists, in the order they were made.
#[derive(Debug, Default)]
struct Model {
    messages: Vec<(u64, String, Option<String>)>,
    events: Vec<(u64, u64)>,
}

impl Model {
    fn offsets_with_id(&self, id: &str) -> Vec<u64> {
        let hash = stable_hash(id.as_bytes());
        let mut offsets: Vec<u64> = (self.messages.iter())
            .filter(|(_, other, _)| stable_hash(other.as_bytes()) == hash)
            .map(|(offset, _, _)| *offset)
            .collect();
        offsets.sort_unstable();
        offsets
    }

    fn offsets_with_key(&self, key: &str) -> Vec<u64> {
        let hash = stable_hash(key.as_bytes());
        let mut offsets: Vec<u64> = (self.messages.iter())
            .filter(|(_, _, other)| {
                other.as_deref().map(str::as_bytes).map(stable_hash) == Some(hash)
            })
            .map(|(offset, _, _)| *offset)
            .collect();
        offsets.sort_unstable();
        offsets
    }

    fn event_positions(&self, offset: u64) -> Vec<u64> {
        let mut positions: Vec<u64> = (self.events.iter())
            .filter(|(about, _)| *about == offset)
            .map(|(_, position)| *position)
            .collect();
        positions.sort_unstable();
        positions
    }
}

/// Plays `notes` into a builder starting at `base` and into the model; returns both and the
/// offsets the builder saw.
fn play(notes: &[Note], base: u64) -> (RunBuilder, Model) {
    let mut builder = RunBuilder::new(base, 0);
    let mut model = Model::default();
    let mut next_offset = base;
    let mut position = 0;
    for note in notes {
        match note {
            Note::Message { id, key } => {
                let id = format!("id-{id}");
                let key = key.map(|key| format!("key-{key}"));
                builder
                    .note_message(next_offset, &id, key.as_deref())
                    .expect("offsets ascend and the run has room");
                model.messages.push((next_offset, id, key));
                next_offset += 1;
                position += 100;
            }
            Note::Event { back, gap } => {
                position += u64::from(*gap);
                let about = next_offset.saturating_sub(u64::from(*back) + 1);
                builder
                    .note_event(about, position)
                    .expect("positions ascend");
                model.events.push((about, position));
            }
        }
        builder.cover_to(position).expect("positions ascend");
    }
    (builder, model)
}

fn every_query_matches(builder: &RunBuilder, view: &RunView<'_>, model: &Model) {
    for id in (0..12).map(|id| format!("id-{id}")) {
        let hash = stable_hash(id.as_bytes());
        assert_eq!(
            builder.offsets_with_id(hash),
            model.offsets_with_id(&id),
            "{id}"
        );
        assert_eq!(
            view.offsets_with_id(hash).collect::<Vec<_>>(),
            model.offsets_with_id(&id)
        );
    }
    for key in (0..4).map(|key| format!("key-{key}")) {
        let hash = stable_hash(key.as_bytes());
        assert_eq!(
            builder.offsets_with_key(hash),
            model.offsets_with_key(&key),
            "{key}"
        );
        assert_eq!(
            view.offsets_with_key(hash).collect::<Vec<_>>(),
            model.offsets_with_key(&key)
        );
    }
    let offsets: BTreeSet<u64> = model.events.iter().map(|(about, _)| *about).collect();
    for offset in offsets.into_iter().chain([u64::MAX]) {
        assert_eq!(
            builder.event_positions(offset),
            model.event_positions(offset)
        );
        assert_eq!(
            view.event_positions(offset).collect::<Vec<_>>(),
            model.event_positions(offset)
        );
    }
}

proptest! {
    #[test]
    fn a_sealed_run_answers_every_query_as_the_model(
        notes in proptest::collection::vec(note(), 0..200),
        base in 0u64..1_000_000,
    ) {
        let (builder, model) = play(&notes, base);
        let bytes = builder.seal();
        let (view, len) = RunView::parse(&bytes).expect("a sealed run parses");
        prop_assert_eq!(len, bytes.len());
        prop_assert_eq!(len, HEADER_LEN + ENTRY_LEN * builder.entries() + 4);
        prop_assert_eq!(view.entries(), builder.entries());
        let first = model.messages.first().map(|(offset, _, _)| *offset);
        let last = model.messages.last().map(|(offset, _, _)| *offset);
        prop_assert_eq!(view.header().offsets, first.zip(last));
        prop_assert_eq!(view.header().covered_to, builder.covered_to());
        every_query_matches(&builder, &view, &model);
    }

    #[test]
    fn a_torn_or_damaged_last_run_is_dropped_and_the_runs_before_it_kept(
        first in proptest::collection::vec(note(), 1..60),
        second in proptest::collection::vec(note(), 1..60),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
    ) {
        let (mut builder, _) = play(&first, 500);
        let mut file = builder.seal();
        let first_len = file.len();
        builder.restart();
        let start = builder.covered_to();
        let mut second_builder = RunBuilder::new(500, start);
        let (played, model) = play(&second, 10_000);
        // The second run continues the same segment where the first stopped.
        for (offset, id, key) in &model.messages {
            second_builder.note_message(*offset, id, key.as_deref()).expect("a note in order with room");
        }
        second_builder.cover_to(start + played.covered_to()).expect("a note in order with room");
        let second_bytes = second_builder.seal();
        file.extend_from_slice(&second_bytes);

        let whole = split_runs(&file, 500);
        prop_assert_eq!(whole.runs.len(), 2);
        prop_assert_eq!(whole.valid_len, file.len());
        prop_assert!(whole.damage.is_none());

        let torn = &file[..first_len + cut.index(second_bytes.len())];
        let split = split_runs(torn, 500);
        prop_assert_eq!(split.runs.len(), 1);
        prop_assert_eq!(split.valid_len, first_len);
        prop_assert_eq!(split.damage.is_some(), torn.len() > first_len);

        let mut damaged = file.clone();
        damaged[first_len + flip.index(second_bytes.len())] ^= 0x20;
        let split = split_runs(&damaged, 500);
        prop_assert_eq!(split.runs.len(), 1);
        prop_assert_eq!(split.valid_len, first_len);
        prop_assert!(split.damage.is_some());
    }

    #[test]
    fn any_bytes_split_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let split = split_runs(&bytes, 0);
        prop_assert!(split.valid_len <= bytes.len());
    }
}

#[test]
fn a_run_of_another_segment_or_with_a_gap_ends_the_file() {
    let mut builder = RunBuilder::new(7, 0);
    builder
        .note_message(7, "a", None)
        .expect("a note in order with room");
    builder.cover_to(40).expect("a note in order with room");
    let first = builder.seal();
    builder.restart();
    builder
        .note_message(8, "b", Some("k"))
        .expect("a note in order with room");
    builder.cover_to(80).expect("a note in order with room");
    let second = builder.seal();

    let file = [first.clone(), second.clone()].concat();
    assert_eq!(split_runs(&file, 7).runs.len(), 2);
    let other = split_runs(&file, 8);
    assert_eq!((other.runs.len(), other.valid_len), (0, 0));

    let gap = [second.clone(), first.clone()].concat();
    let split = split_runs(&gap, 7);
    assert_eq!(
        (split.runs.len(), split.valid_len),
        (0, 0),
        "the first run must start at 0"
    );
    let skipped = [first.clone(), first].concat();
    let split = split_runs(&skipped, 7);
    assert_eq!(
        split.runs.len(),
        1,
        "a run starting at 0 again does not follow one ending at 40"
    );
}

#[test]
fn notes_out_of_order_are_refused_and_change_nothing() {
    let mut builder = RunBuilder::new(0, 100);
    builder
        .note_message(5, "a", None)
        .expect("a note in order with room");
    builder.cover_to(150).expect("a note in order with room");
    let before = builder.clone();
    assert_eq!(
        builder.note_message(5, "b", None),
        Err(TraceIndexError::OffsetOutOfOrder {
            offset: 5,
            previous: 5
        })
    );
    assert_eq!(
        builder.note_event(5, 149),
        Err(TraceIndexError::PositionOutOfOrder {
            position: 149,
            covered_to: 150
        })
    );
    assert_eq!(
        builder.cover_to(120),
        Err(TraceIndexError::PositionOutOfOrder {
            position: 120,
            covered_to: 150
        })
    );
    assert_eq!(builder, before);
}

#[test]
fn a_full_builder_refuses_until_sealed_and_restarted() {
    let mut builder = RunBuilder::new(0, 0);
    let mut offset = 0;
    while builder.has_room() {
        builder
            .note_message(offset, "id", Some("key"))
            .expect("a note in order with room");
        offset += 1;
    }
    assert_eq!(builder.entries(), RUN_ENTRIES);
    assert_eq!(
        builder.note_message(offset, "id", None),
        Err(TraceIndexError::RunFull {
            entries: RUN_ENTRIES
        })
    );
    assert_eq!(
        builder.note_event(0, 0),
        Err(TraceIndexError::RunFull {
            entries: RUN_ENTRIES
        })
    );
    let bytes = builder.seal();
    assert_eq!(bytes.len(), HEADER_LEN + ENTRY_LEN * RUN_ENTRIES + 4);
    RunView::parse(&bytes).expect("a full run parses");
    builder.restart();
    assert!(builder.is_empty());
    builder
        .note_message(offset, "id", None)
        .expect("a note in order with room");
}

#[test]
fn the_byte_form_of_a_run_is_fixed() {
    // A format change must be deliberate: it bumps RUN_VERSION and this vector.
    let mut builder = RunBuilder::new(3, 0);
    builder
        .note_message(3, "m", Some("k"))
        .expect("a note in order with room");
    builder
        .note_event(3, 64)
        .expect("a note in order with room");
    builder.cover_to(96).expect("a note in order with room");
    let hex: String = builder.seal().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, EXPECTED_RUN_HEX);
}

/// The run of `the_byte_form_of_a_run_is_fixed`, field by field.
const EXPECTED_RUN_HEX: &str = concat!(
    "57544952",         // magic "WTIR"
    "01",               // version
    "0300000000000000", // segment base 3
    "0000000000000000", // start position 0
    "6000000000000000", // covered to 96
    "01",               // has offsets
    "0300000000000000", // first offset 3
    "0300000000000000", // last offset 3
    "01000000",         // ids 1
    "01000000",         // keys 1
    "01000000",         // events 1
    "58f301864ce063af", // FNV-1a of "m"
    "0300000000000000", // at offset 3
    "8afd01864ce663af", // FNV-1a of "k"
    "0300000000000000", // at offset 3
    "0300000000000000", // an event about offset 3
    "4000000000000000", // in the frame at position 64
    "33fbe8c5",         // crc32c
);
