//! The free-space reserve of the data folder's file system: produces are refused with
//! [`BrokerError::StorageFull`] while less than the reserve is free, so that the disk never
//! fills while the metadata store writes. sled turns a failed write (ENOSPC included) into an
//! error every later operation returns until the process restarts; with the reserve, deleting a
//! topic or lowering a retention on a full disk still succeeds and gives the space back. The
//! same rule as RocketMQ's `diskMaxUsedSpaceRatio`, in bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::error::{BrokerError, Result};

/// Default reserve: room for sled's log and its segment of metadata writes, a few segment
/// preallocations and the deletes an operator makes to free space, with the writes of one
/// refresh interval at disk speed on top.
pub const DEFAULT_MIN_FREE_BYTES: u64 = 128 * 1024 * 1024;

/// How stale the free-space figure may be, in milliseconds: a `statvfs` is a microsecond, so
/// at most 100 of them a second on the produce path cost nothing, and a disk fills by at most
/// its write rate times this between two looks.
pub const REFRESH_MS: u64 = 10;

/// The reserve, and the last look at the free space.
#[derive(Debug)]
pub struct DiskSpace {
    path: PathBuf,
    min_free: u64,
    /// Monotonic, so that a wall clock set back cannot freeze the figure.
    since: Instant,
    /// Milliseconds after `since` of the last look, plus one (0: never looked).
    checked_at_ms: AtomicU64,
    free: AtomicU64,
}

impl DiskSpace {
    /// A reserve of `min_free` bytes on the file system holding `path` (0: no reserve).
    pub fn new(path: impl Into<PathBuf>, min_free: u64) -> Self {
        Self {
            path: path.into(),
            min_free,
            since: Instant::now(),
            checked_at_ms: AtomicU64::new(0),
            free: AtomicU64::new(u64::MAX),
        }
    }

    /// [`BrokerError::StorageFull`] while less than the reserve is free. A file system that
    /// cannot be asked is not refused for it (the writes themselves will say).
    pub fn check(&self) -> Result<()> {
        if self.min_free == 0 {
            return Ok(());
        }
        let now = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX) + 1;
        let checked = self.checked_at_ms.load(Ordering::Relaxed);
        if checked == 0 || now.saturating_sub(checked) >= REFRESH_MS {
            self.checked_at_ms.store(now, Ordering::Relaxed);
            let free = available(&self.path).unwrap_or(u64::MAX);
            self.free.store(free, Ordering::Relaxed);
        }
        if self.free.load(Ordering::Relaxed) < self.min_free {
            return Err(BrokerError::StorageFull {
                path: self.path.clone(),
            });
        }
        Ok(())
    }
}

/// The share of the file system holding `path` that an unprivileged writer can no longer
/// use, 0 to 1 (the `disk` alert's measure); `None` if the file system cannot be asked or
/// reports no size.
pub fn used_share(path: &Path) -> Option<f64> {
    let total = fs2::total_space(path).ok().filter(|total| *total > 0)?;
    let available = available(path)?.min(total);
    Some(1.0 - available as f64 / total as f64)
}

/// Bytes an unprivileged writer may still use on the file system holding `path`.
fn available(path: &Path) -> Option<u64> {
    fs2::available_space(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserve_larger_than_the_disk_refuses_and_none_or_a_small_one_does_not() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(DiskSpace::new(dir.path(), 0).check().is_ok());
        assert!(DiskSpace::new(dir.path(), 1).check().is_ok());
        let refused = DiskSpace::new(dir.path(), u64::MAX).check();
        assert!(
            matches!(refused, Err(BrokerError::StorageFull { .. })),
            "{refused:?}"
        );
    }
}
