//! Retention: deleting whole old segments by age and by total size.
//!
//! Only a prefix of the log goes, oldest segment first, so the stored offsets stay contiguous;
//! the active segment (the newest), any segment with uncommitted batches, and every segment
//! from the one holding `keep_from` on stay: `keep_from` is the oldest log position that state
//! derived from the log (subscription checkpoints, the delay schedule and dedup index)
//! reflects, and a restart replays control entries from there, so they must still exist. A
//! segment is old when its largest record timestamp is more than `retention_ms` before
//! `now_ms`.
//!
//! Order of a deletion, chosen so a crash at any point leaves a log recovery accepts: unlink the
//! file and make that durable, move the start offset (readers below it jump to it), forget the
//! segment, and only then drop its index entries (recovery drops leftovers below the first file).

use std::sync::Arc;

use super::segment::{Segment, sync_dir};
use super::view::{LogPosition, LogView};
use crate::error::Result;

impl LogView {
    /// Deletes old segments per the two limits, none from the one holding `keep_from` on;
    /// returns how many went.
    pub(crate) fn enforce_retention(
        &self,
        now_ms: u64,
        retention_ms: Option<u64>,
        retention_bytes: Option<u64>,
        keep_from: LogPosition,
    ) -> Result<usize> {
        let _serial = crate::sync::lock(&self.retention);
        let mut deleted = 0;
        while let Some((oldest, next_base)) = self.oldest_sealed() {
            if keep_from.segment_base < next_base {
                break;
            }
            let expired = match retention_ms {
                Some(ms) => self
                    .segment_max_ts(&oldest, next_base)?
                    .is_none_or(|max_ts| now_ms.saturating_sub(max_ts) > ms),
                None => false,
            };
            let oversized = retention_bytes.is_some_and(|limit| self.size_bytes() > limit);
            if !expired && !oversized {
                break;
            }
            self.delete_segment(&oldest, next_base)?;
            deleted += 1;
        }
        Ok(deleted)
    }

    /// The largest timestamp in a sealed segment (`None` if it holds no batch), cached.
    fn segment_max_ts(&self, segment: &Segment, next_base: u64) -> Result<Option<u64>> {
        if let Some(max_ts) = segment.cached_max_ts() {
            return Ok(Some(max_ts));
        }
        let max_ts = self.max_ts_between(segment.base_offset(), next_base)?;
        if let Some(max_ts) = max_ts {
            segment.cache_max_ts(max_ts);
        }
        Ok(max_ts)
    }

    pub(super) fn delete_segment(&self, segment: &Segment, next_base: u64) -> Result<()> {
        segment.remove_file()?;
        sync_dir(self.dir())?;
        self.advance_start(next_base);
        self.remove_segment(segment.base_offset());
        self.forget_chunks_below(next_base);
        self.index().remove_below(next_base)?;
        tracing::info!(
            path = %segment.path().display(),
            start_offset = next_base,
            "retention deleted a segment"
        );
        Ok(())
    }
}

impl LogView {
    /// What [`LogView::enforce_retention`] would delete from a replicated log, without
    /// deleting: the Raft index of the last entry in the segments that would go, or `None`
    /// when none would. A replicated log's prefix goes through Raft (a snapshot, then a
    /// purge up to this index), so every replica deletes the same whole segments it would
    /// delete on a single node. Blocking (reads segment heads and the index).
    pub(crate) fn retention_purge_index(
        &self,
        now_ms: u64,
        retention_ms: Option<u64>,
        retention_bytes: Option<u64>,
        keep_from: LogPosition,
    ) -> Result<Option<u64>> {
        let segments = self.all_segments();
        let mut size: u64 = segments.iter().map(|s| s.size()).sum();
        let mut first_kept = None;
        for pair in segments.windows(2) {
            let [oldest, next] = pair else { break };
            let next_base = next.base_offset();
            if keep_from.segment_base < next_base || next_base > self.end_offset() {
                break;
            }
            let expired = match retention_ms {
                Some(ms) => self
                    .segment_max_ts(oldest, next_base)?
                    .is_none_or(|max_ts| now_ms.saturating_sub(max_ts) > ms),
                None => false,
            };
            let oversized = retention_bytes.is_some_and(|limit| size > limit);
            if !expired && !oversized {
                break;
            }
            size = size.saturating_sub(oldest.size());
            first_kept = Some(Arc::clone(next));
        }
        let Some(kept) = first_kept else {
            return Ok(None);
        };
        Ok(kept.first_raft_index()?.and_then(|i| i.checked_sub(1)))
    }
}
