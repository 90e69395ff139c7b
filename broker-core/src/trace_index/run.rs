//! The byte form of a run, [`RunView`] to query one in place, and [`split_runs`] over the
//! runs of an index file.
//!
//! ```text
//! run    = magic u32 ("WTIR") | version u8 | segment base u64 | start position u64
//!        | covered to u64 | has offsets u8 | first offset u64 | last offset u64
//!        | ids u32 | keys u32 | events u32
//!        | ids × (hash u64, offset u64)        sorted
//!        | keys × (hash u64, offset u64)       sorted
//!        | events × (offset u64, position u64) sorted
//!        | crc32c(everything before) u32
//! ```
//!
//! All integers are little-endian; entries are 16 bytes, so a run of `n` entries takes
//! `62 + 16 n` bytes. A run's checksum comes last, so a write torn anywhere fails it.

use super::RUN_ENTRIES;
use super::error::TraceIndexError;

/// The first four bytes of every run: `WTIR`.
pub const RUN_MAGIC: u32 = u32::from_le_bytes(*b"WTIR");
/// The run format this build writes and reads.
pub const RUN_VERSION: u8 = 1;
/// Bytes of a run before its entries.
pub const HEADER_LEN: usize = 4 + 1 + 8 + 8 + 8 + 1 + 8 + 8 + 4 + 4 + 4;
/// Bytes of one entry.
pub const ENTRY_LEN: usize = 16;
/// Bytes of the checksum that ends a run.
const CHECKSUM_LEN: usize = 4;

/// What a run says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunHeader {
    /// The first offset of the segment the run indexes (its file name).
    pub segment_base: u64,
    /// The segment position the run's stretch starts at.
    pub start_position: u64,
    /// The segment position the run's stretch ends at: the next run starts here.
    pub covered_to: u64,
    /// The first and last offsets of the messages the run indexes; none when its stretch
    /// held control frames only.
    pub offsets: Option<(u64, u64)>,
}

/// Encodes a run; the entries must be sorted (the builder sorts them).
pub(super) fn encode(
    header: RunHeader,
    ids: &[(u64, u64)],
    keys: &[(u64, u64)],
    events: &[(u64, u64)],
) -> Vec<u8> {
    let entries = ids.len() + keys.len() + events.len();
    let mut bytes = Vec::with_capacity(HEADER_LEN + ENTRY_LEN * entries + CHECKSUM_LEN);
    bytes.extend_from_slice(&RUN_MAGIC.to_le_bytes());
    bytes.push(RUN_VERSION);
    for word in [
        header.segment_base,
        header.start_position,
        header.covered_to,
    ] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    let (has_offsets, (first, last)) = match header.offsets {
        Some(offsets) => (1, offsets),
        None => (0, (0, 0)),
    };
    bytes.push(has_offsets);
    bytes.extend_from_slice(&first.to_le_bytes());
    bytes.extend_from_slice(&last.to_le_bytes());
    for list in [ids, keys, events] {
        // The builder holds at most RUN_ENTRIES, far below u32::MAX.
        let count = u32::try_from(list.len()).unwrap_or(u32::MAX);
        bytes.extend_from_slice(&count.to_le_bytes());
    }
    for (a, b) in ids.iter().chain(keys).chain(events) {
        bytes.extend_from_slice(&a.to_le_bytes());
        bytes.extend_from_slice(&b.to_le_bytes());
    }
    bytes.extend_from_slice(&crc32c::crc32c(&bytes).to_le_bytes());
    bytes
}

/// One run read in place: its header and its three sorted entry lists, searched without
/// copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunView<'a> {
    header: RunHeader,
    ids: Entries<'a>,
    keys: Entries<'a>,
    events: Entries<'a>,
}

impl<'a> RunView<'a> {
    /// The run at the start of `bytes` and the bytes it takes. Checks, in order, the length,
    /// the magic, the version, the checksum and the invariants (counts within
    /// [`RUN_ENTRIES`], coverage not backwards, entries sorted); never panics.
    pub fn parse(bytes: &'a [u8]) -> Result<(RunView<'a>, usize), TraceIndexError> {
        let head = bytes.get(..HEADER_LEN).ok_or(TraceIndexError::Truncated {
            len: bytes.len(),
            needed: HEADER_LEN,
        })?;
        let magic = u32_at(head, 0);
        if magic != RUN_MAGIC {
            return Err(TraceIndexError::BadMagic { found: magic });
        }
        if head[4] != RUN_VERSION {
            return Err(TraceIndexError::Version {
                found: head[4],
                expected: RUN_VERSION,
            });
        }
        let counts = [u32_at(head, 46), u32_at(head, 50), u32_at(head, 54)].map(|n| n as usize);
        let entries: usize = counts.iter().sum();
        if entries > RUN_ENTRIES {
            // Checked before the checksum: the length below is computed from the counts.
            return Err(TraceIndexError::Malformed("more entries than a run holds"));
        }
        let len = HEADER_LEN + ENTRY_LEN * entries + CHECKSUM_LEN;
        let run = bytes.get(..len).ok_or(TraceIndexError::Truncated {
            len: bytes.len(),
            needed: len,
        })?;
        let (body, checksum) = run.split_at(len - CHECKSUM_LEN);
        if crc32c::crc32c(body) != u32_at(checksum, 0) {
            return Err(TraceIndexError::Checksum);
        }
        let header = RunHeader {
            segment_base: u64_at(head, 5),
            start_position: u64_at(head, 13),
            covered_to: u64_at(head, 21),
            offsets: match head[29] {
                0 => None,
                1 => Some((u64_at(head, 30), u64_at(head, 38))),
                _ => return Err(TraceIndexError::Malformed("the offsets flag is not 0 or 1")),
            },
        };
        let view = RunView::checked(header, &body[HEADER_LEN..], counts)?;
        Ok((view, len))
    }

    fn checked(
        header: RunHeader,
        entries: &'a [u8],
        [ids, keys, events_count]: [usize; 3],
    ) -> Result<RunView<'a>, TraceIndexError> {
        if header.covered_to < header.start_position {
            return Err(TraceIndexError::Malformed("the run covers backwards"));
        }
        let (ids, rest) = entries.split_at(ENTRY_LEN * ids);
        let (keys, events) = rest.split_at(ENTRY_LEN * keys);
        let view = RunView {
            header,
            ids: Entries(ids),
            keys: Entries(keys),
            events: Entries(&events[..ENTRY_LEN * events_count]),
        };
        if ![view.ids, view.keys, view.events]
            .iter()
            .all(Entries::is_sorted)
        {
            return Err(TraceIndexError::Malformed("entries out of order"));
        }
        let in_range = match header.offsets {
            Some((first, last)) => {
                !view.ids.is_empty()
                    && first <= last
                    && view
                        .ids
                        .iter()
                        .all(|(_, offset)| (first..=last).contains(&offset))
            }
            None => view.ids.is_empty(),
        };
        if !in_range {
            return Err(TraceIndexError::Malformed(
                "message offsets outside the run's range",
            ));
        }
        Ok(view)
    }

    /// What the run says about itself.
    pub fn header(&self) -> RunHeader {
        self.header
    }

    /// Entries the run holds.
    pub fn entries(&self) -> usize {
        self.ids.len() + self.keys.len() + self.events.len()
    }

    /// Offsets of the messages whose id hashes to `hash`, ascending.
    pub fn offsets_with_id(&self, hash: u64) -> impl Iterator<Item = u64> + 'a {
        self.ids.with_first(hash)
    }

    /// Offsets of the messages whose key hashes to `hash`, ascending.
    pub fn offsets_with_key(&self, hash: u64) -> impl Iterator<Item = u64> + 'a {
        self.keys.with_first(hash)
    }

    /// Positions of the frames holding events about the message at `offset`, ascending.
    pub fn event_positions(&self, offset: u64) -> impl Iterator<Item = u64> + 'a {
        self.events.with_first(offset)
    }
}

/// A sorted list of 16-byte `(u64, u64)` entries in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entries<'a>(&'a [u8]);

impl<'a> Entries<'a> {
    fn len(&self) -> usize {
        self.0.len() / ENTRY_LEN
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn get(&self, i: usize) -> (u64, u64) {
        let at = i * ENTRY_LEN;
        (u64_at(self.0, at), u64_at(self.0, at + 8))
    }

    fn iter(&self) -> impl Iterator<Item = (u64, u64)> + Clone + 'a {
        let entries = *self;
        (0..entries.len()).map(move |i| entries.get(i))
    }

    fn is_sorted(&self) -> bool {
        let mut previous = None;
        self.iter().all(|entry| {
            let ordered = previous.is_none_or(|p| p <= entry);
            previous = Some(entry);
            ordered
        })
    }

    /// The second halves of the entries whose first half is `first`, ascending.
    fn with_first(&self, first: u64) -> impl Iterator<Item = u64> + 'a {
        let entries = *self;
        // The first entry not below `first`: a binary search over the sorted entries.
        let (mut low, mut high) = (0, entries.len());
        while low < high {
            let middle = low + (high - low) / 2;
            if entries.get(middle).0 < first {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        (low..entries.len())
            .map(move |i| entries.get(i))
            .take_while(move |(a, _)| *a == first)
            .map(|(_, b)| b)
    }
}

/// The runs of an index file, in file order, and where the valid ones end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRuns<'a> {
    /// The runs that parsed, each starting where the one before it ended.
    pub runs: Vec<RunView<'a>>,
    /// Bytes of the file the runs take: the follower truncates the file here and indexes
    /// again from the last run's [`RunHeader::covered_to`] (or the segment's start).
    pub valid_len: usize,
    /// Why the bytes after `valid_len` are not a run (a torn write, damage, a run of another
    /// segment or one that does not start where the last ended); none when every byte was
    /// read.
    pub damage: Option<TraceIndexError>,
}

/// Reads the runs of the index file of the segment whose first offset is `segment_base`.
/// Never panics, whatever the bytes.
pub fn split_runs(bytes: &[u8], segment_base: u64) -> SplitRuns<'_> {
    let mut runs: Vec<RunView<'_>> = Vec::new();
    let mut valid_len = 0;
    let mut expected_start = 0;
    let damage = loop {
        if valid_len == bytes.len() {
            break None;
        }
        let (run, len) = match RunView::parse(&bytes[valid_len..]) {
            Ok(parsed) => parsed,
            Err(error) => break Some(error),
        };
        if run.header.segment_base != segment_base {
            break Some(TraceIndexError::Malformed("a run of another segment"));
        }
        if run.header.start_position != expected_start {
            break Some(TraceIndexError::Malformed(
                "a run that does not start where the previous one ended",
            ));
        }
        expected_start = run.header.covered_to;
        runs.push(run);
        valid_len += len;
    };
    SplitRuns {
        runs,
        valid_len,
        damage,
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}
