//! The sampler: one task per node that samples the broker every
//! [`History::sample_every`](super::History::sample_every) into the [`History`], and writes the
//! finished minutes to its files on the blocking pool. [`Sampler::stop`] takes a last sample,
//! closes the minutes being filled and writes them, so a restart keeps them.

use std::sync::Arc;

use broker_core::Broker;
use broker_core::broker::FiguresOf;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{Finished, History, SubscriptionGauges};

/// The running sampler.
#[derive(Debug)]
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `broker` into `history`.
    pub fn start(history: Arc<History>, broker: Arc<Broker>) -> Sampler {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(run(history, broker, stopped));
        Sampler { stop, task }
    }

    /// Stops it after a last sample, with every minute being filled written.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::warn!(%error, "the history sampler failed");
        }
    }
}

async fn run(history: Arc<History>, broker: Arc<Broker>, mut stopped: oneshot::Receiver<()>) {
    let mut ticks = tokio::time::interval(history.sample_every());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => sample(&history, &broker).await,
            _ = &mut stopped => break,
        }
    }
    sample(&history, &broker).await;
    let closed = history.close_all();
    write(&history, closed).await;
}

/// Takes one sample and writes what it finished.
pub async fn sample(history: &Arc<History>, broker: &Broker) {
    // A restarted cluster node re-applying the metadata may not know every topic yet: a
    // sample now would drop (and delete the files of) the series of those it does not.
    if broker.metadata_behind() {
        return;
    }
    let totals = broker.history_totals();
    let mut gauges = SubscriptionGauges::new();
    for topic in &totals {
        // A topic deleted since the totals were read has no figures: its series goes at the
        // next sample.
        let Ok(figures) = broker
            .subscription_figures(&topic.name, FiguresOf::All)
            .await
        else {
            continue;
        };
        for sub in &figures.subscriptions {
            let mut backlog = 0;
            let mut oldest = 0;
            for (stats, served) in sub.partitions.iter().zip(&figures.served) {
                if *served {
                    backlog += stats.backlog;
                    oldest = oldest.max(stats.oldest_unacked_age_ms.unwrap_or(0));
                }
            }
            let key = (topic.name.clone(), sub.config.name.clone());
            gauges.insert(key, [backlog, oldest]);
        }
    }
    let finished = history.observe(history.now_ms(), &totals, &gauges);
    write(history, finished).await;
}

/// Writes `finished` (what [`History::observe`] or [`History::close_all`] returned) to the
/// files (if any) on the blocking pool; a failure is logged, the minutes stay in memory.
pub async fn write(history: &Arc<History>, finished: Finished) {
    if history.files().is_none()
        || (finished.topics.is_empty()
            && finished.subscriptions.is_empty()
            && finished.removed.is_empty())
    {
        return;
    }
    let history = Arc::clone(history);
    let written = tokio::task::spawn_blocking(move || {
        let Some(files) = history.files() else {
            return Ok(());
        };
        for key in &finished.removed {
            files.remove(key)?;
        }
        for (key, record) in &finished.topics {
            files.write(key, record)?;
        }
        for (key, record) in &finished.subscriptions {
            files.write(key, record)?;
        }
        std::io::Result::Ok(())
    })
    .await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "cannot write the history files"),
        Err(error) => tracing::warn!(%error, "the history writer failed"),
    }
}
