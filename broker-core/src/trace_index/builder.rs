//! [`RunBuilder`]: the index entries of the stretch of a segment being indexed, queried as
//! they are and sealed into a run ([`RunBuilder::seal`]) when full or when the segment is.

use super::RUN_ENTRIES;
use super::error::TraceIndexError;
use super::hash::stable_hash;

/// The entries of one run in the making. The follower reads the segment's frames in order
/// and, for each frame at `position`, notes its messages ([`note_message`](Self::note_message))
/// or the subscription events it holds ([`note_event`](Self::note_event)), then
/// [`cover_to`](Self::cover_to)s the frame's end.
///
/// Queries scan the entries (at most [`RUN_ENTRIES`], 256 KiB): a trace lookup is an
/// operator's request, rare next to the notes, so the builder keeps them in arrival order
/// and sorts only when sealing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBuilder {
    segment_base: u64,
    start_position: u64,
    covered_to: u64,
    last_offset: Option<u64>,
    /// `(id hash, offset)` per message, offsets ascending.
    ids: Vec<(u64, u64)>,
    /// `(key hash, offset)` per keyed message, offsets ascending.
    keys: Vec<(u64, u64)>,
    /// `(message offset, frame position)` per event, positions ascending.
    events: Vec<(u64, u64)>,
}

impl RunBuilder {
    /// An empty run of the segment whose first offset is `segment_base`, covering from
    /// `start_position` (0 for a segment's first run, the previous run's
    /// [`covered_to`](super::RunHeader::covered_to) after it).
    pub fn new(segment_base: u64, start_position: u64) -> RunBuilder {
        RunBuilder {
            segment_base,
            start_position,
            covered_to: start_position,
            last_offset: None,
            ids: Vec::new(),
            keys: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Notes the message at `offset` with its `id` and `key`. Offsets must ascend; the
    /// builder must have room for two entries ([`has_room`](Self::has_room)).
    pub fn note_message(
        &mut self,
        offset: u64,
        id: &str,
        key: Option<&str>,
    ) -> Result<(), TraceIndexError> {
        if let Some(previous) = self.last_offset.filter(|previous| offset <= *previous) {
            return Err(TraceIndexError::OffsetOutOfOrder { offset, previous });
        }
        self.check_room()?;
        self.last_offset = Some(offset);
        self.ids.push((stable_hash(id.as_bytes()), offset));
        if let Some(key) = key {
            self.keys.push((stable_hash(key.as_bytes()), offset));
        }
        Ok(())
    }

    /// Notes that the control frame at `position` of the segment holds an event about the
    /// message at `offset` (which may sit in an earlier segment). `position` must not be
    /// below what the builder covers already.
    pub fn note_event(&mut self, offset: u64, position: u64) -> Result<(), TraceIndexError> {
        if position < self.covered_to {
            return Err(TraceIndexError::PositionOutOfOrder {
                position,
                covered_to: self.covered_to,
            });
        }
        self.check_room()?;
        self.events.push((offset, position));
        Ok(())
    }

    /// Records that the segment is indexed up to byte `position` (the end of the last frame
    /// read), where indexing resumes after this run.
    pub fn cover_to(&mut self, position: u64) -> Result<(), TraceIndexError> {
        if position < self.covered_to {
            return Err(TraceIndexError::PositionOutOfOrder {
                position,
                covered_to: self.covered_to,
            });
        }
        self.covered_to = position;
        Ok(())
    }

    /// Entries noted: messages, keyed messages and events.
    pub fn entries(&self) -> usize {
        self.ids.len() + self.keys.len() + self.events.len()
    }

    /// Whether another message (up to two entries: its id and its key) fits.
    pub fn has_room(&self) -> bool {
        self.entries() + 2 <= RUN_ENTRIES
    }

    /// Whether nothing was noted and nothing covered since the start.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0 && self.covered_to == self.start_position
    }

    /// The base offset of the segment the run is of.
    pub fn segment_base(&self) -> u64 {
        self.segment_base
    }

    /// The segment position the run covers up to.
    pub fn covered_to(&self) -> u64 {
        self.covered_to
    }

    /// Offsets of the messages noted whose id hashes to `hash`, ascending.
    pub fn offsets_with_id(&self, hash: u64) -> Vec<u64> {
        matching(&self.ids, hash)
    }

    /// Offsets of the messages noted whose key hashes to `hash`, ascending.
    pub fn offsets_with_key(&self, hash: u64) -> Vec<u64> {
        matching(&self.keys, hash)
    }

    /// Positions of the frames holding events about the message at `offset`, ascending
    /// (a position appears once per event in its frame).
    pub fn event_positions(&self, offset: u64) -> Vec<u64> {
        self.events
            .iter()
            .filter(|(about, _)| *about == offset)
            .map(|(_, position)| *position)
            .collect()
    }

    /// The run's bytes ([`super::run`] gives the layout), its entries sorted for search.
    pub fn seal(&self) -> Vec<u8> {
        let mut ids = self.ids.clone();
        let mut keys = self.keys.clone();
        let mut events = self.events.clone();
        ids.sort_unstable();
        keys.sort_unstable();
        events.sort_unstable();
        let offsets = self
            .ids
            .first()
            .zip(self.last_offset)
            .map(|((_, first), last)| (*first, last));
        super::run::encode(
            super::RunHeader {
                segment_base: self.segment_base,
                start_position: self.start_position,
                covered_to: self.covered_to,
                offsets,
            },
            &ids,
            &keys,
            &events,
        )
    }

    /// Empties the builder for the next run of the same segment, which starts where this
    /// one's coverage ends. Call it once the sealed bytes are written.
    pub fn restart(&mut self) {
        *self = RunBuilder::new(self.segment_base, self.covered_to);
    }

    fn check_room(&self) -> Result<(), TraceIndexError> {
        if self.has_room() {
            Ok(())
        } else {
            Err(TraceIndexError::RunFull {
                entries: self.entries(),
            })
        }
    }
}

fn matching(entries: &[(u64, u64)], hash: u64) -> Vec<u64> {
    entries
        .iter()
        .filter(|(entry_hash, _)| *entry_hash == hash)
        .map(|(_, offset)| *offset)
        .collect()
}
