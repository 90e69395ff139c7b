//! The trace index of one partition on disk (issue 12): the follower that keeps it up with the
//! log, and the queries a message lookup makes. Derived state ([`crate::trace_index`] is its
//! pure core): one file per segment, `<partition>/trace/<segment base>.trace`, holding the
//! runs of that segment's stretch, appended as each run fills or its segment ends; the run
//! being built is in memory. A file whose segment retention deleted is deleted with it.
//!
//! Nothing here is fsynced and nothing waits on it: a run lost or torn by a crash fails its
//! checksum, the file is cut after the last good run, and the follower indexes that stretch
//! of the log again (from the last run's `covered_to`, at most [`RUN_ENTRIES`] entries back).
//! The log stays the truth; this only finds things in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::control::{self, ControlOwner};
use crate::error::{BrokerError, Result};
use crate::storage::{FrameBody, LogPosition, PartitionHandle};
use crate::subscription::events::SubscriptionEvent;
use crate::trace_index::{RUN_ENTRIES, RunBuilder, split_runs, stable_hash};

/// The folder of a partition's index files, inside the partition's folder.
pub const TRACE_DIR: &str = "trace";
/// The ending of an index file's name.
const FILE_SUFFIX: &str = ".trace";
/// Frames one [`TraceStore::catch_up`] reads at most: the bound of the work (and of the time
/// the store's lock is held) of one round of the follower, so a lookup waits for at most one
/// round, and a partition far behind (a data folder from before the index existed) catches
/// up over several rounds instead of holding everything else back.
pub const FRAMES_PER_ROUND: usize = 4_096;

/// The index of one partition: its files and the run being built.
#[derive(Debug)]
pub struct TraceStore {
    dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Whether the files were read (and a torn tail cut) since this process opened the store.
    opened: bool,
    /// The run being built; its `covered_to` (with its segment) is where the follower resumes.
    builder: RunBuilder,
}

impl TraceStore {
    /// The store of the partition whose folder is `partition_dir`; nothing is read until the
    /// first [`TraceStore::catch_up`].
    pub fn new(partition_dir: &Path) -> TraceStore {
        TraceStore {
            dir: partition_dir.join(TRACE_DIR),
            state: Mutex::new(State {
                opened: false,
                builder: RunBuilder::new(0, 0),
            }),
        }
    }

    /// Indexes up to [`FRAMES_PER_ROUND`] frames of `log` past what is indexed, writes the
    /// runs that filled, and deletes the files of segments retention removed; whether it
    /// reached the log's visible end. Blocking file I/O.
    pub fn catch_up(&self, log: &PartitionHandle) -> Result<bool> {
        let mut state = crate::sync::lock(&self.state);
        if !state.opened {
            state.builder = self.open_files()?;
            state.opened = true;
        }
        let from = LogPosition {
            segment_base: state.builder_segment(),
            position: state.builder.covered_to(),
        };
        let mut frames = 0;
        let end = log.walk_frames(from, FRAMES_PER_ROUND, |frame| {
            frames += 1;
            if frame.start.segment_base != state.builder_segment() {
                self.seal(&state.builder)?;
                state.builder = RunBuilder::new(frame.start.segment_base, frame.start.position);
            }
            let notes = notes_of(&frame.body);
            if state.builder.entries() + notes.len() + 2 > RUN_ENTRIES
                && !state.builder.is_empty()
            {
                self.seal(&state.builder)?;
                state.builder.restart();
            }
            for note in notes {
                let noted = match note {
                    Note::Message { offset, id, key } => {
                        state.builder.note_message(offset, id, key)
                    }
                    Note::Event { offset } => {
                        state.builder.note_event(offset, frame.start.position)
                    }
                };
                if let Err(error) = noted {
                    // A frame larger than a whole run (no produce makes one): the rest of it
                    // is not findable by id, and lookups say nothing wrong about it.
                    tracing::warn!(%error, "a frame too large for the trace index; part of it is not indexed");
                    break;
                }
            }
            state
                .builder
                .cover_to(frame.end.position)
                .map_err(|e| self.corrupt(e))
        })?;
        self.prune(&log.segment_bases());
        Ok(frames < FRAMES_PER_ROUND || end >= log.end_position())
    }

    /// Offsets of the messages whose id may be `id` (hash matches; the caller reads each
    /// record and keeps those whose id is `id`), oldest first. Blocking file I/O.
    pub fn offsets_with_id(&self, id: &str) -> Result<Vec<u64>> {
        let hash = stable_hash(id.as_bytes());
        self.query(
            |run| run.offsets_with_id(hash).collect(),
            |builder| builder.offsets_with_id(hash),
        )
    }

    /// Offsets of the messages whose key may be `key`, oldest first. Blocking file I/O.
    pub fn offsets_with_key(&self, key: &str) -> Result<Vec<u64>> {
        let hash = stable_hash(key.as_bytes());
        self.query(
            |run| run.offsets_with_key(hash).collect(),
            |builder| builder.offsets_with_key(hash),
        )
    }

    /// Where the control frames holding subscription events about `offset` start, in log
    /// order. Blocking file I/O.
    pub fn event_frames(&self, offset: u64) -> Result<Vec<LogPosition>> {
        let mut found = Vec::new();
        let files = self.files()?;
        for (base, path) in &files {
            let bytes = read_file(path)?;
            for run in split_runs(&bytes, *base).runs {
                found.extend(run.event_positions(offset).map(|position| LogPosition {
                    segment_base: *base,
                    position,
                }));
            }
        }
        let state = crate::sync::lock(&self.state);
        let segment_base = state.builder_segment();
        found.extend(
            state
                .builder
                .event_positions(offset)
                .into_iter()
                .map(|position| LogPosition {
                    segment_base,
                    position,
                }),
        );
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// Bytes the index files take.
    pub fn size_bytes(&self) -> u64 {
        self.files()
            .unwrap_or_default()
            .values()
            .filter_map(|path| std::fs::metadata(path).ok())
            .map(|meta| meta.len())
            .sum()
    }

    fn query(
        &self,
        in_run: impl Fn(&crate::trace_index::RunView<'_>) -> Vec<u64>,
        in_builder: impl FnOnce(&RunBuilder) -> Vec<u64>,
    ) -> Result<Vec<u64>> {
        let mut found = Vec::new();
        for (base, path) in &self.files()? {
            let bytes = read_file(path)?;
            for run in split_runs(&bytes, *base).runs {
                found.extend(in_run(&run));
            }
        }
        found.extend(in_builder(&crate::sync::lock(&self.state).builder));
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// Reads the files at start: the newest one's torn tail is cut, and the follower resumes
    /// where its last good run ended (the start of the first segment without a file).
    fn open_files(&self) -> Result<RunBuilder> {
        let files = self.files()?;
        let Some((base, path)) = files.iter().next_back() else {
            return Ok(RunBuilder::new(0, 0));
        };
        let bytes = read_file(path)?;
        let split = split_runs(&bytes, *base);
        let covered = split.runs.last().map_or(0, |run| run.header().covered_to);
        if let Some(damage) = &split.damage {
            tracing::warn!(%damage, file = %path.display(), "cutting a damaged trace index tail; the stretch is indexed again");
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| BrokerError::io(path, e))?;
            file.set_len(split.valid_len as u64)
                .map_err(|e| BrokerError::io(path, e))?;
        }
        Ok(RunBuilder::new(*base, covered))
    }

    /// Appends the builder's run to its segment's file, if it holds anything. Only the
    /// index folder is created, never the partition's: a partition whose folder is gone was
    /// deleted under this round (its topic was), and its index goes with it.
    fn seal(&self, builder: &RunBuilder) -> Result<()> {
        if builder.is_empty() {
            return Ok(());
        }
        match std::fs::create_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(BrokerError::io(&self.dir, e)),
        }
        let path = self.file_of(builder_segment_of(builder));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| BrokerError::io(&path, e))?;
        std::io::Write::write_all(&mut file, &builder.seal()).map_err(|e| BrokerError::io(&path, e))
    }

    /// Deletes the files of segments that are gone (older than the oldest segment left).
    fn prune(&self, segment_bases: &[u64]) {
        let Some(oldest) = segment_bases.first() else {
            return;
        };
        for (base, path) in self.files().unwrap_or_default() {
            if base < *oldest
                && let Err(error) = std::fs::remove_file(&path)
            {
                tracing::warn!(%error, file = %path.display(), "deleting a trace index file failed");
            }
        }
    }

    /// The index files by segment base.
    fn files(&self) -> Result<BTreeMap<u64, PathBuf>> {
        let mut files = BTreeMap::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
            Err(e) => return Err(BrokerError::io(&self.dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| BrokerError::io(&self.dir, e))?;
            let name = entry.file_name();
            if let Some(base) = name
                .to_str()
                .and_then(|n| n.strip_suffix(FILE_SUFFIX))
                .and_then(|n| n.parse::<u64>().ok())
            {
                files.insert(base, entry.path());
            }
        }
        Ok(files)
    }

    fn file_of(&self, segment_base: u64) -> PathBuf {
        self.dir.join(format!("{segment_base:020}{FILE_SUFFIX}"))
    }

    fn corrupt(&self, error: crate::trace_index::TraceIndexError) -> BrokerError {
        BrokerError::Corrupt {
            path: self.dir.clone(),
            position: 0,
            reason: error.to_string(),
        }
    }
}

impl State {
    fn builder_segment(&self) -> u64 {
        builder_segment_of(&self.builder)
    }
}

fn builder_segment_of(builder: &RunBuilder) -> u64 {
    builder.segment_base()
}

/// What a frame adds to the index.
enum Note<'a> {
    Message {
        offset: u64,
        id: &'a str,
        key: Option<&'a str>,
    },
    Event {
        offset: u64,
    },
}

fn notes_of(body: &FrameBody) -> Vec<Note<'_>> {
    match body {
        FrameBody::Messages {
            base_offset,
            records,
        } => (*base_offset..)
            .zip(records)
            .map(|(offset, record)| Note::Message {
                offset,
                id: &record.id,
                key: record.key.as_deref(),
            })
            .collect(),
        FrameBody::Controls(entries) => entries
            .iter()
            .filter(|entry| control::owner(entry) == Some(ControlOwner::Subscription))
            .filter_map(|entry| SubscriptionEvent::decode(entry).ok())
            .filter_map(|event| event_offset(&event))
            .map(|offset| Note::Event { offset })
            .collect(),
        FrameBody::Other => Vec::new(),
    }
}

/// The message an event is about; none for events about a whole subscription (seek, redrive).
pub fn event_offset(event: &SubscriptionEvent) -> Option<u64> {
    match event {
        SubscriptionEvent::Acked { offset, .. }
        | SubscriptionEvent::Nacked { offset, .. }
        | SubscriptionEvent::Redelivered { offset, .. }
        | SubscriptionEvent::Delivered { offset, .. }
        | SubscriptionEvent::DeadLettered { offset, .. }
        | SubscriptionEvent::Leased { offset, .. } => Some(*offset),
        SubscriptionEvent::Sought { .. } | SubscriptionEvent::Redriven { .. } => None,
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        // Retention deleted it since the listing: nothing of it is wanted any more.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(BrokerError::io(path, e)),
    }
}
