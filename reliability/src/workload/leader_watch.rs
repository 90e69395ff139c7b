//! [`LeaderWatch`]: a task that asks every node's `GET /v1/cluster` in turn and records each
//! (partition, leader, Raft term) of the topic under test it had not seen yet as a `leader`
//! event, so the checker counts leader changes and finds two leaders of one term.
//!
//! A node names a leader only for a term whose vote a quorum granted (openraft's
//! `current_leader` is none for a candidate's own, uncommitted vote), so two different leaders
//! reported for one term, by any nodes at any times, break Raft's election safety.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::task::{JoinHandle, JoinSet};

use super::api::{Api, GroupSeen, Reply};
use super::recorder::Recorder;
use crate::event::{NodeId, Partition};
use crate::harness::Endpoint;

/// Pause between two rounds of asking every node: an election takes a second or more here, so
/// five rounds a second see every term's leader, at a few light requests per node and second.
pub const WATCH_PERIOD: Duration = Duration::from_millis(200);

/// Bound on one node's answer: a node that takes longer is skipped this round (it may be cut
/// off or busy); the next round asks again.
pub const WATCH_CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// The running watch.
#[derive(Debug)]
pub struct LeaderWatch {
    stop: Arc<AtomicBool>,
    task: JoinHandle<u64>,
}

impl LeaderWatch {
    /// Starts watching `topic`'s partitions on `endpoints`, recording into `recorder`. Call it
    /// inside a tokio runtime.
    pub fn start(
        endpoints: Vec<Endpoint>,
        topic: String,
        recorder: Recorder,
    ) -> reqwest::Result<LeaderWatch> {
        let api = Api::new(WATCH_CALL_TIMEOUT)?;
        let stop = Arc::new(AtomicBool::new(false));
        let watching = Watching {
            api,
            endpoints,
            topic,
            recorder,
            seen: BTreeSet::new(),
        };
        let task = tokio::spawn(watching.run(stop.clone()));
        Ok(LeaderWatch { stop, task })
    }

    /// Stops after the round under way; returns how many observations were recorded.
    pub async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Release);
        self.task.await.unwrap_or(0)
    }
}

struct Watching {
    api: Api,
    endpoints: Vec<Endpoint>,
    topic: String,
    recorder: Recorder,
    seen: BTreeSet<(Partition, NodeId, u64)>,
}

impl Watching {
    async fn run(mut self, stop: Arc<AtomicBool>) -> u64 {
        while !stop.load(Ordering::Acquire) {
            self.round().await;
            tokio::time::sleep(WATCH_PERIOD).await;
        }
        self.round().await;
        self.seen.len() as u64
    }

    /// Asks every node at once and records what is new.
    async fn round(&mut self) {
        let mut asks = JoinSet::new();
        for endpoint in &self.endpoints {
            let (api, url) = (self.api.clone(), endpoint.url.clone());
            asks.spawn(async move { api.cluster_groups(&url).await });
        }
        while let Some(answer) = asks.join_next().await {
            if let Ok(Reply::Ok(groups)) = answer {
                self.note(&groups);
            }
        }
    }

    fn note(&mut self, groups: &[GroupSeen]) {
        for group in groups.iter().filter(|g| g.topic == self.topic) {
            let (Some(leader), Some(term)) = (group.leader, group.term) else {
                continue;
            };
            if self.seen.insert((group.partition, leader, term)) {
                self.recorder.record_leader(group.partition, leader, term);
            }
        }
    }
}
