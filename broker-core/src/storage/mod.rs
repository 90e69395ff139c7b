//! Durable per-partition logs: append-only segment files of CRC-framed record batches, indexed
//! in sled, written by one thread per partition.
//!
//! # Layout
//! - [`PartitionHandle`] (`writer`): the one type the broker uses. Clonable; appends go over a
//!   bounded queue to the partition's writer thread (group commit: many producers, one fsync);
//!   reads, time lookups and retention run on the caller's thread.
//! - `partition_log`: the synchronous single-writer log the thread owns: append, roll, fsync,
//!   commit. `view`: the read side every clone shares (segments, start and end offsets, reads,
//!   timestamp lookups); `retention` deletes whole old segments from it.
//! - `recovery`: opening a log: the segment files are the truth; a torn or corrupt tail is cut
//!   at the last valid batch and missing index entries are rebuilt from the files.
//! - `segment`: one `{base_offset:020}.log` file. `codec`: the batch frame and its CRC; a
//!   frame holds messages or control entries (durable state changes that take no offsets).
//!   `index`: offset → frame position and timestamp → offset, in the partition's `sled::Tree`.
//! - A replicated partition's log is its Raft log, one frame per entry (`codec::raft`:
//!   [`EntryBody`]). `raft_handle` appends, cuts and purges entries through the writer thread
//!   and publishes what Raft applied ([`PartitionHandle::open_replicated`]); `raft_view`
//!   finds and reads entries by index; `raft_tail` keeps the newest entries' places in memory;
//!   `partition_log::raft` is the writer's side; `raft_state` keeps the vote and the purged
//!   and committed ids ([`RaftState`]).
//! - `disk_events`: where `segment` reports each change to a file, for `crash_sim` (feature
//!   `crash-sim`, tests only), which simulates a power loss from what the fsyncs covered.
//!
//! # On disk
//! One directory per partition holds its segment files; the caller gives the directory and the
//! partition's own `sled::Tree`. A batch keeps its base offset, record count, leader epoch and
//! first/largest timestamps in its frame, so the files alone can rebuild the index.

pub(crate) mod codec;
#[cfg(feature = "crash-sim")]
pub mod crash_sim;
mod disk_events;
mod entry_marks;
mod frames;
mod index;
mod partition_log;
mod proposer;
mod queued_bytes;
mod raft_handle;
mod raft_state;
mod raft_tail;
mod raft_view;
mod reads;
mod recent;
mod recovery;
mod retention;
mod segment;
mod tail;
mod view;
mod writer;
mod writer_thread;

pub use codec::raft::EntryBody;
pub use codec::{BatchHeader, BatchKind};
pub use frames::{Frame, FrameBody};
pub use proposer::{ProposalSlot, ProposeFuture, Proposer};
pub use raft_handle::{EntriesWritten, RaftEntry};
pub use raft_state::{MAX_RAFT_STATE_FIELD, RaftState};
pub use raft_tail::EntryLocation;
pub use raft_view::DamagedEntries;
pub use reads::{MessageFrames, Replayed};
pub(crate) use segment::sync_dir;
pub use view::LogPosition;
pub(crate) use writer::batch_bytes;
pub use writer::{
    AppendResult, ControlSlot, PartitionHandle, PendingAppend, QUEUE_FULL_RETRY_AFTER_MS,
};
