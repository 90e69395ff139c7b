//! Opening a partition's log: the segment files are the truth, the index is brought in line.
//!
//! 1. Open every `{base:020}.log` in the directory (an empty directory gets segment 0 and an
//!    empty index). Index entries below the first file are leftovers of retention: dropped.
//! 2. Walk back from the newest index entry to the newest one whose frame is intact, dropping
//!    entries whose frame is gone or bad. The scan resumes at that chunk, whose entry is
//!    dropped too and rebuilt.
//! 3. Scan forward from there through the rest of that segment and every later one, checking
//!    each frame's CRC and that its offsets follow on, noting it in a fresh in-memory index
//!    (this rebuilds what sled lost, or never got, before the crash). At the first bad frame
//!    the segment is cut there and later segments deleted: the log ends at the last valid
//!    batch. A later segment whose base does not follow on is deleted the same way. Each
//!    segment scanned to its end is fsynced and its index chunks go to sled, so memory holds
//!    at most one segment's chunks.
//!
//! The index only ever holds chunks of fsynced bytes (see `recent`), so no torn frame lies
//! before the newest entry: only what follows it is read, one chunk plus whatever was never
//! indexed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::codec::BatchKind;
use super::index::{BatchLocation, LogIndex};
use super::raft_tail::{EntryLocation, RaftTail};
use super::recent::RecentIndex;
use super::segment::{ScanStep, Segment, sync_dir};
use super::view::LogPosition;
use crate::error::{BrokerError, Result};

/// A recovered log: its segments, oldest first, and one past its last valid offset.
pub(crate) struct Recovered {
    /// Every segment, by base offset; never empty.
    pub segments: BTreeMap<u64, Arc<Segment>>,
    /// One past the last offset of the last valid batch.
    pub end_offset: u64,
    /// The index chunks of the tail that sled does not hold.
    pub recent: RecentIndex,
    /// The Raft entries of the scanned tail (replicated partitions), the log's last among them.
    pub raft: RaftTail,
}

/// Where the forward scan starts.
#[derive(Debug, Clone, Copy)]
struct Resume {
    segment_base: u64,
    position: u64,
    next_offset: u64,
}

/// Opens the log in `dir`, cutting a bad tail and completing the index.
pub(crate) fn recover(dir: &Path, index: &LogIndex) -> Result<Recovered> {
    std::fs::create_dir_all(dir).map_err(|e| BrokerError::io(dir, e))?;
    let mut segments = open_segments(dir)?;
    let Some(&first_base) = segments.keys().next() else {
        index.clear()?;
        let segment = Arc::new(Segment::create(dir, 0)?);
        return Ok(Recovered {
            segments: BTreeMap::from([(0, segment)]),
            end_offset: 0,
            recent: RecentIndex::default(),
            raft: RaftTail::default(),
        });
    };
    index.remove_below(first_base)?;
    let resume = last_intact_batch(&segments, index)?.unwrap_or(Resume {
        segment_base: first_base,
        position: 0,
        next_offset: first_base,
    });
    index.remove_from(resume.next_offset)?;
    let mut recent = RecentIndex::default();
    let mut raft = RaftTail::default();
    let end_offset = scan_tail(dir, &mut segments, index, resume, (&mut recent, &mut raft))?;
    index.remove_from(end_offset)?;
    Ok(Recovered {
        segments,
        end_offset,
        recent,
        raft,
    })
}

fn open_segments(dir: &Path) -> Result<BTreeMap<u64, Arc<Segment>>> {
    let mut segments = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|e| BrokerError::io(dir, e))? {
        let entry = entry.map_err(|e| BrokerError::io(dir, e))?;
        let name = entry.file_name();
        if let Some(base) = name.to_str().and_then(Segment::parse_file_name) {
            segments.insert(base, Arc::new(Segment::open(entry.path(), base)?));
        }
    }
    Ok(segments)
}

fn last_intact_batch(
    segments: &BTreeMap<u64, Arc<Segment>>,
    index: &LogIndex,
) -> Result<Option<Resume>> {
    while let Some(location) = index.batches_from(0).next_back().transpose()? {
        if is_intact(segments, &location) {
            return Ok(Some(Resume {
                segment_base: location.segment_base,
                position: location.position,
                next_offset: location.base_offset,
            }));
        }
        tracing::warn!(
            base_offset = location.base_offset,
            "index entry points at a missing or bad frame; dropping it"
        );
        index.remove_from(location.base_offset)?;
    }
    Ok(None)
}

fn is_intact(segments: &BTreeMap<u64, Arc<Segment>>, location: &BatchLocation) -> bool {
    let Some(segment) = segments.get(&location.segment_base) else {
        return false;
    };
    segment
        .read_frame(location.position, location.frame_len.into())
        .is_ok_and(|batch| {
            batch.header.base_offset == location.base_offset
                && batch.header.record_count == location.record_count
        })
}

fn scan_tail(
    dir: &Path,
    segments: &mut BTreeMap<u64, Arc<Segment>>,
    index: &LogIndex,
    resume: Resume,
    (recent, raft): (&mut RecentIndex, &mut RaftTail),
) -> Result<u64> {
    let mut next_offset = resume.next_offset;
    let tail: Vec<Arc<Segment>> = segments
        .range(resume.segment_base..)
        .map(|(_, s)| Arc::clone(s))
        .collect();
    for (i, segment) in tail.iter().enumerate() {
        let start = if i == 0 { resume.position } else { 0 };
        if i > 0 && segment.base_offset() != next_offset {
            tracing::warn!(path = %segment.path().display(), next_offset, "segment does not follow on");
            delete_segments(dir, segments, &tail[i..])?;
            break;
        }
        if let Some((position, bad)) =
            scan_segment(segment, start, &mut next_offset, (recent, raft))?
        {
            let path = segment.path().display();
            match bad {
                Some(reason) => {
                    tracing::warn!(%path, position, %reason, "cutting a bad tail");
                    if let Some(beyond) = last_entry_beyond(segment, position, &tail[i + 1..])? {
                        tracing::warn!(%path, position, index = beyond.index, "intact Raft entries lie beyond the bad frame: damage, not a torn write");
                        raft.note_cut_beyond(beyond);
                    }
                }
                None => tracing::info!(%path, position, "cutting the zeros after the last frame"),
            }
            segment.truncate(position)?;
            delete_segments(dir, segments, &tail[i + 1..])?;
            break;
        }
        if let Some(next) = tail.get(i + 1) {
            segment.sync()?;
            persist_chunks(index, recent, next.base_offset())?;
        }
    }
    Ok(next_offset)
}

/// The last intact Raft entry beyond the bad frame at `position` of `segment`: stepping over
/// that frame by the length its prefix gives, then in `later` segments. A write torn by a
/// crash has nothing intact after it; damage to data already written does.
fn last_entry_beyond(
    segment: &Segment,
    position: u64,
    later: &[Arc<Segment>],
) -> Result<Option<EntryLocation>> {
    let mut last = match segment.claimed_frame_len(position)? {
        Some(len) => last_entry_from(segment, position + len)?,
        None => None,
    };
    for segment in later {
        last = last_entry_from(segment, 0)?.or(last);
    }
    Ok(last)
}

/// The last Raft entry of the intact frames from `position` on in `segment`.
fn last_entry_from(segment: &Segment, mut position: u64) -> Result<Option<EntryLocation>> {
    let mut last = None;
    while let ScanStep::Frame { batch, frame_len } = segment.scan_at(position)? {
        let at = LogPosition {
            segment_base: segment.base_offset(),
            position,
        };
        last = EntryLocation::of(&batch.header, at, frame_len).or(last);
        position += frame_len;
    }
    Ok(last)
}

/// Moves the chunks of the segments before `next_segment` (scanned to their end and fsynced)
/// into sled.
fn persist_chunks(index: &LogIndex, recent: &mut RecentIndex, next_segment: u64) -> Result<()> {
    let synced = LogPosition {
        segment_base: next_segment,
        position: 0,
    };
    let chunks: Vec<BatchLocation> = recent
        .persistable(synced)
        .into_iter()
        .filter(|c| c.segment_base < next_segment)
        .collect();
    if let Some(last) = chunks.last() {
        let mut staged = index.stage()?;
        chunks.iter().for_each(|c| staged.add(c));
        index.apply(&mut staged)?;
        recent.forget_below(last.base_offset + 1);
    }
    Ok(())
}

/// Indexes the valid frames from `position` on; returns where the first bad one is and why
/// (no reason: zeros, as written ahead of the log's end).
fn scan_segment(
    segment: &Segment,
    mut position: u64,
    next_offset: &mut u64,
    (recent, raft): (&mut RecentIndex, &mut RaftTail),
) -> Result<Option<(u64, Option<String>)>> {
    loop {
        let (batch, frame_len) = match segment.scan_at(position)? {
            ScanStep::End => return Ok(None),
            ScanStep::Invalid(reason) => return Ok(Some((position, Some(reason)))),
            ScanStep::Zeros => return Ok(Some((position, None))),
            // A full scan reads every frame; recovery must not trust one it did not.
            ScanStep::Skipped { .. } => return Err(segment.corrupt(position, "skipped unread")),
            ScanStep::Frame { batch, frame_len } => (batch, frame_len),
        };
        if batch.header.base_offset != *next_offset {
            let reason = format!(
                "batch starts at offset {}, expected {next_offset}",
                batch.header.base_offset
            );
            return Ok(Some((position, Some(reason))));
        }
        let at = LogPosition {
            segment_base: segment.base_offset(),
            position,
        };
        if let Some(entry) = EntryLocation::of(&batch.header, at, frame_len) {
            if raft.last().is_some_and(|last| entry.index <= last.index) {
                let reason = format!(
                    "Raft entry {} does not come after its predecessor",
                    entry.index
                );
                return Ok(Some((position, Some(reason))));
            }
            raft.push(entry);
        }
        if batch.header.kind != BatchKind::Messages {
            position += frame_len;
            continue;
        }
        recent.note(&BatchLocation {
            base_offset: batch.header.base_offset,
            record_count: batch.header.record_count,
            segment_base: segment.base_offset(),
            position,
            frame_len: u32::try_from(frame_len).unwrap_or(u32::MAX),
            max_ts: batch.header.max_ts,
        });
        position += frame_len;
        *next_offset = batch.header.next_offset();
    }
}

fn delete_segments(
    dir: &Path,
    segments: &mut BTreeMap<u64, Arc<Segment>>,
    doomed: &[Arc<Segment>],
) -> Result<()> {
    for segment in doomed {
        tracing::warn!(path = %segment.path().display(), "deleting a segment past the valid end");
        segment.remove_file()?;
        segments.remove(&segment.base_offset());
    }
    sync_dir(dir)
}
