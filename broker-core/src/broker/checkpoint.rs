//! Checkpoints of subscription state: about once a second, every lease table's changes since
//! the last checkpoint go to sled with the log position they cover, off every request's path.
//! A restart loads them and replays only the log after them (see `subscription::restore`);
//! shutdown writes a last one, so a clean restart replays nothing. In a cluster the tables a
//! node does not lead follow their logs and are checkpointed instead (see `live_tables`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::live_tables::follow_tables;
use super::{Broker, background_blocking, blocking};
use crate::error::Result;
use crate::storage::PartitionHandle;
use crate::subscription::Subscription;
use crate::sync::read;

/// How often lease tables are checkpointed: a crash makes the next start replay about this
/// much of the log, and lets messages leased since the last checkpoint come back before
/// their leases would have ended.
pub const CHECKPOINT_EVERY_MS: u64 = 1_000;

/// One subscription and the partition logs of its topic.
type Work = Vec<(Arc<Subscription>, Vec<PartitionHandle>)>;

impl Broker {
    /// Every live subscription with its topic's partitions.
    fn checkpoint_work(&self) -> Work {
        let topics: Vec<_> = read(&self.topics).values().cloned().collect();
        let mut work = Vec::new();
        for topic in topics {
            for sub in read(&topic.subscriptions).values() {
                work.push((Arc::clone(sub), topic.partitions.clone()));
            }
        }
        work
    }

    /// Checkpoints every subscription now. Blocking sled writes run on the blocking pool.
    pub(super) async fn checkpoint_all(&self) -> Result<()> {
        if self.replication.is_some() {
            let work = self.follow_work();
            return blocking(move || follow_tables(&work)).await;
        }
        let work = self.checkpoint_work();
        blocking(move || checkpoint(&work)).await
    }
}

fn checkpoint(work: &Work) -> Result<()> {
    for (sub, logs) in work {
        for (partition, log) in logs.iter().enumerate() {
            sub.checkpoint(partition, log.end_position())?;
        }
    }
    Ok(())
}

/// Checkpoints every [`CHECKPOINT_EVERY_MS`] until the broker shuts down.
pub(super) async fn checkpoint_loop(broker: Weak<Broker>) {
    let mut tick = tokio::time::interval(Duration::from_millis(CHECKPOINT_EVERY_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(live) = broker.upgrade() else { return };
        if live.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let gate = Arc::clone(&live.background);
        let done = if live.replication.is_some() {
            let work = live.follow_work();
            drop(live);
            background_blocking(&gate, move || follow_tables(&work)).await
        } else {
            let work = live.checkpoint_work();
            drop(live);
            background_blocking(&gate, move || checkpoint(&work)).await
        };
        if let Err(error) = done {
            tracing::error!(%error, "checkpointing subscription state failed");
        }
    }
}
