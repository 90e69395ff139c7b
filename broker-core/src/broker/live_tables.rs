//! Subscriptions in a cluster. The controller decides which subscriptions exist (with their
//! uids); every node opens them ([`Broker::materialize_subscription`]), but only the tables of
//! the partitions it holds a replica of follow a log (a partition held elsewhere is served
//! by its leader, see `broker::cluster`).
//! A partition's lease table is live only on the partition's leader: receives, settles and
//! seeks of that partition are served there, and its changes reach the other replicas as
//! events of the partition's Raft log (acks, nacks, attempts, dead letters, seeks, and each
//! lease with its deadline). Every other replica's table follows the log and is what it
//! checkpoints ([`Broker::follow_tables`]). A node that gains the leadership makes its table
//! live once every entry of earlier terms is applied here, so it holds each message in flight
//! until its lease would have ended and accepts its receipt (receipts are signed with a key
//! every node shares). A receive hands messages out only once this node has proved it still
//! leads the partition (a heartbeat round a quorum answered, else the leases' commit): a
//! leader paused or cut off believes it leads until it hears of a newer term, while its
//! table may show as waiting what the new leader has since delivered and had acked. The
//! leases themselves commit in the background, about a millisecond later: a leader that
//! dies in between takes those leases with it, and the new leader hands the messages out
//! again sooner (at least once, as after a single node's crash before its checkpoint).
//!
//! A subscription's start on a partition is the first `sought` event of its log, which the
//! partition's first leader to serve the subscription appends (at the log's end for
//! `latest`, its start for `earliest`), so every replica agrees on it.

use std::sync::Arc;
use std::time::Duration;

use super::{Broker, Topic, blocking};
use crate::error::{BrokerError, Result};
use crate::raft::{Proved, prove_leadership};
use crate::storage::PartitionHandle;
use crate::subscription::events::SubscriptionEvent;
use crate::subscription::{StartPosition, Subscription, SubscriptionConfig};
use crate::sync::{read, write};
use crate::telemetry::{self, LeadershipProof};

/// How long [`Broker::subscription_started`] callers should wait between looks: about a
/// heartbeat, so the start a leader appended is seen soon after it commits.
pub const START_POLL_MS: u64 = 50;

/// Whether this node serves a partition's subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lead {
    /// A single node: it serves everything.
    Single,
    /// This node leads the partition in this term, and has applied every earlier entry and
    /// every entry its log held when its replica started.
    Leader(u64),
    /// Another node leads it (or nobody does, or this node's leadership is too new).
    Other(Option<u64>),
}

impl Broker {
    /// Whether this node serves the subscriptions of `topic`'s partition `partition` now.
    pub(super) fn lead(&self, topic: &Topic, partition: usize) -> Lead {
        let Some(replication) = &self.replication else {
            return Lead::Single;
        };
        let Some(seat) = topic.groups.get(partition) else {
            return Lead::Other(None);
        };
        let Some(lead) = seat.view() else {
            return Lead::Other(seat.hint());
        };
        match lead.leader {
            Some(leader) if leader == replication.node_id => {
                if lead.applied_term == Some(lead.term) && lead.applied_opened_log {
                    Lead::Leader(lead.term)
                } else {
                    Lead::Other(None)
                }
            }
            other => Lead::Other(other),
        }
    }

    /// Whether this node still leads `topic`'s `partition` in the term `sub`'s table went
    /// live in, so that nothing it settled is missing from the live table: by a write or
    /// heartbeat round a quorum took that began within [`crate::raft::READ_LEASE_MS`] (its
    /// voters elect no one else for twice that), else by a heartbeat round sent after this
    /// call (Raft's read-index check); see [`crate::raft::prove_leadership`]. `false` when
    /// neither shows it or the term moved: the caller then proves it the slower way, by a
    /// commit.
    pub(super) async fn still_leads(
        &self,
        topic: &Topic,
        sub: &Subscription,
        partition: usize,
    ) -> bool {
        let Some(seated) = topic.groups.get(partition).and_then(|g| g.seated()) else {
            return false;
        };
        let Some(term) = sub.live_term(partition) else {
            return false;
        };
        let proved = prove_leadership(&seated.raft, seated.proposer.proof(), term).await;
        telemetry::leadership_proved(match proved {
            Some(Proved::Lease) => LeadershipProof::Lease,
            Some(Proved::Round) => LeadershipProof::Round,
            None => LeadershipProof::Commit,
        });
        proved.is_some()
    }

    /// Whether this node holds a replica of `topic`'s `partition` (always on a single node).
    fn held(&self, topic: &Topic, partition: usize) -> bool {
        self.replication.is_none() || topic.groups.get(partition).is_some_and(|g| g.held())
    }

    /// Whether this node serves `sub` on `partition` now; on a leader, makes its table live
    /// first (and gives the subscription its start there if it has none). `false` when
    /// another node leads the partition.
    pub(super) async fn serve_partition(
        &self,
        topic: &Topic,
        sub: &Arc<Subscription>,
        partition: usize,
    ) -> Result<bool> {
        if self.replication.is_none() {
            return Ok(true);
        }
        let term = match self.lead(topic, partition) {
            Lead::Single => return Ok(true),
            Lead::Other(_) => return Ok(false),
            Lead::Leader(term) => term,
        };
        if sub.live_term(partition) == Some(term) && sub.started(partition) {
            return Ok(true);
        }
        let _turn = sub.live_turn.lock().await;
        let log = topic.partitions[partition].clone();
        let (making, reading) = (Arc::clone(sub), log.clone());
        let started = blocking(move || making.make_live(partition, term, &reading)).await?;
        if !started {
            let offset = match sub.config.start {
                StartPosition::Latest => log.end_offset(),
                StartPosition::Earliest => log.start_offset(),
            };
            let event = SubscriptionEvent::Sought {
                subscription: sub.config.uid,
                offset,
            };
            let ((), pending) = sub.change_durably(partition, &log, |table| {
                table.reset(offset);
                ((), vec![event])
            })?;
            if let Some(pending) = pending {
                pending.wait().await?;
            }
            sub.mark_started(partition);
            tracing::debug!(topic = %topic.config().name, subscription = %sub.config.name, partition, offset, "subscription started");
        }
        Ok(true)
    }

    /// In a cluster, [`BrokerError::NotLeader`] (naming the first partition's leader) unless
    /// this node serves at least one of `topic`'s partitions for `sub`.
    pub(super) async fn require_some_partition(
        &self,
        topic: &Topic,
        sub: &Arc<Subscription>,
    ) -> Result<()> {
        if self.replication.is_none() {
            return Ok(());
        }
        for partition in 0..topic.partitions.len() {
            if self.serve_partition(topic, sub, partition).await? {
                return Ok(());
            }
        }
        self.require_partition(topic, sub, 0).await
    }

    /// [`Broker::serve_partition`], or [`BrokerError::NotLeader`] naming the leader.
    pub(super) async fn require_partition(
        &self,
        topic: &Topic,
        sub: &Arc<Subscription>,
        partition: usize,
    ) -> Result<()> {
        if self.serve_partition(topic, sub, partition).await? {
            return Ok(());
        }
        let name = topic.config().name;
        let leader = match self.lead(topic, partition) {
            Lead::Other(leader) => {
                leader.filter(|l| Some(*l) != self.replication.as_ref().map(|r| r.node_id))
            }
            _ => None,
        };
        Err(BrokerError::NotLeader {
            what: format!("partition {partition} of topic '{name}'"),
            leader,
        })
    }

    /// In a cluster, what [`follow_tables`] does now: every table with its log, whether this
    /// node leads it live, and the term it was live in.
    pub(super) fn follow_work(&self) -> FollowWork {
        let topics: Vec<Arc<Topic>> = read(&self.topics).values().cloned().collect();
        let mut work = Vec::new();
        for topic in topics {
            for sub in read(&topic.subscriptions).values() {
                for (partition, log) in topic.partitions.iter().enumerate() {
                    if !self.held(&topic, partition) {
                        continue;
                    }
                    let live = sub.live_term(partition);
                    let leading = match self.lead(&topic, partition) {
                        Lead::Leader(term) => live == Some(term),
                        _ => false,
                    };
                    work.push(FollowItem {
                        sub: Arc::clone(sub),
                        log: log.clone(),
                        partition,
                        live,
                        leading,
                    });
                }
            }
        }
        work
    }

    /// Opens subscription `config` as the controller created it, unless it is open already
    /// (a subscription open under another uid is replaced). Its tables follow the logs from
    /// their start; the partitions led here get their start at once.
    pub async fn materialize_subscription(&self, config: SubscriptionConfig) -> Result<()> {
        self.check_running()?;
        let open = self.topic(&config.topic)?;
        {
            let _admin = self.admin.lock().await;
            if let Ok(existing) = open.subscription(&config.name) {
                if existing.config.uid == config.uid {
                    return Ok(());
                }
                self.metadata.remove_subscription(&existing.config)?;
                write(&open.subscriptions).remove(&config.name);
            }
            let store = self.metadata.subscription_store(config.uid)?;
            let logs = open.partitions.clone();
            let starts: Vec<u64> = logs.iter().map(|l| l.start_offset()).collect();
            let opening = config.clone();
            let subscription =
                blocking(move || Subscription::open(opening, store, &starts, &logs, true)).await?;
            self.metadata.save_subscription(&config)?;
            self.persist().await?;
            write(&open.subscriptions).insert(config.name.clone(), Arc::new(subscription));
            tracing::info!(topic = %config.topic, subscription = %config.name, "materialized subscription");
        }
        let sub = open.subscription(&config.name)?;
        for partition in 0..open.partitions.len() {
            self.serve_partition(&open, &sub, partition).await?;
        }
        Ok(())
    }

    /// The uid of a subscription as open here.
    pub fn subscription_uid(&self, topic: &str, name: &str) -> Option<u64> {
        let open = self.topic(topic).ok()?;
        let sub = open.subscription(name).ok()?;
        Some(sub.config.uid)
    }

    /// The names and uids of a topic's subscriptions open here.
    pub fn subscription_uids(&self, topic: &str) -> Vec<(String, u64)> {
        let Ok(open) = self.topic(topic) else {
            return Vec::new();
        };
        read(&open.subscriptions)
            .iter()
            .map(|(name, sub)| (name.clone(), sub.config.uid))
            .collect()
    }

    /// Whether subscription `name` (incarnation `uid`) has its start on every partition held
    /// here as this node's logs show: its tables follow the logs first. The partitions led
    /// here are given their start.
    pub async fn subscription_started(&self, topic: &str, name: &str, uid: u64) -> Result<bool> {
        let open = self.topic(topic)?;
        let Ok(sub) = open.subscription(name) else {
            return Ok(false);
        };
        if sub.config.uid != uid {
            return Ok(false);
        }
        for partition in 0..open.partitions.len() {
            // A partition held elsewhere gets its start from its own leader.
            if !self.held(&open, partition) {
                continue;
            }
            if self.serve_partition(&open, &sub, partition).await? {
                continue;
            }
            let (following, log) = (Arc::clone(&sub), open.partitions[partition].clone());
            let live = sub.live_term(partition);
            blocking(move || following.follow(partition, live, &log)).await?;
            if !sub.started(partition) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Waits up to `ms` until [`Broker::subscription_started`].
    pub async fn wait_subscription_started(
        &self,
        topic: &str,
        name: &str,
        uid: u64,
        ms: u64,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        while !self.subscription_started(topic, name, uid).await? {
            if tokio::time::Instant::now() >= deadline {
                return Err(BrokerError::ReplicationTimeout {
                    what: format!("the start of subscription '{name}'"),
                    ms,
                });
            }
            tokio::time::sleep(Duration::from_millis(START_POLL_MS)).await;
        }
        Ok(())
    }

    /// For each partition of `topic`, the node leading it as this node knows (all `None` on a
    /// single node).
    pub fn partition_leaders(&self, topic: &str) -> Result<Vec<Option<u64>>> {
        let open = self.topic(topic)?;
        Ok((0..open.partitions.len() as u32)
            .map(|p| self.partition_leader(topic, p))
            .collect())
    }

    /// What wakes on every commit (or apply, on a follower) to any partition of `topic`: a
    /// receive gathering from several leaders waits on it between rounds.
    pub fn commit_signal(&self, topic: &str) -> Result<Arc<tokio::sync::Notify>> {
        Ok(Arc::clone(&self.topic(topic)?.on_commit))
    }

    /// The partition a receipt of subscription `name` names, if it is one of its receipts.
    pub fn receipt_partition(&self, topic: &str, name: &str, receipt: &str) -> Option<u32> {
        let open = self.topic(topic).ok()?;
        let sub = open.subscription(name).ok()?;
        self.receipts
            .decode(receipt)
            .filter(|d| d.subscription_uid == sub.config.uid)
            .map(|d| d.partition)
            .filter(|p| (*p as usize) < open.partitions.len())
    }
}

/// One table for [`follow_tables`].
pub(super) struct FollowItem {
    sub: Arc<Subscription>,
    log: PartitionHandle,
    partition: usize,
    live: Option<u64>,
    leading: bool,
}

/// Every table of the node, for [`follow_tables`].
pub(super) type FollowWork = Vec<FollowItem>;

/// In a cluster, brings every table this node does not lead up to date with its log and
/// checkpoints it; a live table lets go of its change record (see
/// `Subscription::discard_changes`). Blocking.
pub(super) fn follow_tables(work: &FollowWork) -> Result<()> {
    for item in work {
        if item.leading {
            item.sub.discard_changes(item.partition);
        } else {
            item.sub.follow(item.partition, item.live, &item.log)?;
        }
    }
    Ok(())
}
