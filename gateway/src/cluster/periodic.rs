//! [`Periodic`]: a background task that takes one [`Look`] every period until stopped; a
//! look that overruns its period delays the next one rather than bunching them. The keepers
//! a cluster node runs (the probe keeper, preferred-leader election) are such tasks.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a [`Periodic`] task does at each tick, with the state it keeps between ticks. Each
/// look must bound its own steps: stopping waits for the look under way.
pub(crate) trait Look: Send + 'static {
    /// One look.
    fn look(&mut self) -> impl Future<Output = ()> + Send;
}

/// A running periodic task.
#[derive(Debug)]
pub(crate) struct Periodic {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Periodic {
    /// Starts taking `looker`'s look every `every` (the first at once).
    pub(crate) fn start(every: Duration, mut looker: impl Look) -> Periodic {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut interval = tokio::time::interval(every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = interval.tick() => {}
                }
                looker.look().await;
            }
        });
        Periodic { stop, task }
    }

    /// Stops after the look under way and waits for it.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
