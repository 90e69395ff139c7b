//! The shape every per-topic background task shares: a blocking job on the background pool
//! every so often, until the topic is deleted or the broker shuts down.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Broker, Topic, background_blocking};
use crate::error::Result;

/// Runs `work` over `topic` on the background pool every `every_ms` (a late tick waits, it is
/// not made up) until the topic is deleted or the broker shuts down, and hands each outcome
/// to `after` back on the runtime.
pub(super) async fn every_tick<W>(
    broker: Weak<Broker>,
    topic: Arc<Topic>,
    every_ms: u64,
    work: W,
    mut after: impl FnMut(&Topic, Result<()>),
) where
    W: Fn(&Topic) -> Result<()> + Clone + Send + 'static,
{
    let Some(gate) = broker.upgrade().map(|b| Arc::clone(&b.background)) else {
        return;
    };
    let mut tick = tokio::time::interval(Duration::from_millis(every_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(live) = broker.upgrade() else { return };
        if live.shutting_down.load(Ordering::SeqCst) || topic.deleted.load(Ordering::SeqCst) {
            return;
        }
        drop(live);
        let (on, job) = (Arc::clone(&topic), work.clone());
        let outcome = background_blocking(&gate, move || job(&on)).await;
        after(&topic, outcome);
    }
}
