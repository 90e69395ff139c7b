//! The queued-bytes budget of a partition writer: the bytes of requests queued and not yet
//! answered, so that the queue's depth of big batches cannot pin gigabytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{BrokerError, Result};

/// The `Retry-After` a producer gets when the partition's queued-bytes budget is spent: the
/// writer drains [`crate::limits::MAX_WRITER_QUEUED_BYTES`] in well under a second at disk
/// speed.
pub const QUEUED_BYTES_RETRY_AFTER_MS: u64 = 1_000;

/// Bytes of one request counted in a partition's queued-bytes budget; returned on drop.
pub(super) struct QueuedBytes {
    budget: Arc<AtomicUsize>,
    bytes: usize,
}

impl QueuedBytes {
    /// Counts `bytes` in `budget` unless that would pass `limit` with other bytes queued.
    pub(super) fn reserve(
        budget: &Arc<AtomicUsize>,
        bytes: usize,
        limit: usize,
    ) -> Result<QueuedBytes> {
        let mut queued = budget.load(Ordering::Acquire);
        loop {
            if queued > 0 && queued.saturating_add(bytes) > limit {
                return Err(BrokerError::Overloaded {
                    resource: "partition writer byte budget",
                    retry_after_ms: QUEUED_BYTES_RETRY_AFTER_MS,
                });
            }
            match budget.compare_exchange_weak(
                queued,
                queued + bytes,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Ok(QueuedBytes {
                        budget: Arc::clone(budget),
                        bytes,
                    });
                }
                Err(now) => queued = now,
            }
        }
    }
}

impl QueuedBytes {
    /// Counts `bytes` in `budget` whatever it holds.
    pub(super) fn force(budget: &Arc<AtomicUsize>, bytes: usize) -> QueuedBytes {
        budget.fetch_add(bytes, Ordering::AcqRel);
        QueuedBytes {
            budget: Arc::clone(budget),
            bytes,
        }
    }
}

impl Drop for QueuedBytes {
    fn drop(&mut self) {
        self.budget.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queued_bytes_budget_is_checked_on_both_sides_and_freed_on_drop() {
        let budget = Arc::new(AtomicUsize::new(0));
        let first = QueuedBytes::reserve(&budget, 60, 100).expect("empty queue");
        let second = QueuedBytes::reserve(&budget, 39, 100).expect("limit - 1");
        let refused = QueuedBytes::reserve(&budget, 2, 100);
        assert!(
            matches!(refused, Err(BrokerError::Overloaded { .. })),
            "limit + 1"
        );
        let exact = QueuedBytes::reserve(&budget, 1, 100).expect("exactly the limit");
        drop((first, second, exact));
        assert_eq!(budget.load(Ordering::Acquire), 0);
        let alone = QueuedBytes::reserve(&budget, 500, 100).expect("alone always fits");
        assert!(QueuedBytes::reserve(&budget, 1, 100).is_err());
        drop(alone);
    }
}
