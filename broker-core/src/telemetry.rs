//! The broker's metrics, recorded through the `metrics` facade (a no-op until a recorder is
//! installed; the gateway installs a Prometheus one and serves `/metrics`). The names are API
//! for dashboards and alerts: keep them stable.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use metrics::{Counter, Unit, counter, describe_counter, describe_histogram, histogram};

/// Messages stored by produces, per topic (delayed ones when they are scheduled).
pub const PRODUCED_MESSAGES: &str = "wharf_produced_messages_total";
/// Value bytes stored by produces, per topic.
pub const PRODUCED_BYTES: &str = "wharf_produced_bytes_total";
/// Deliveries made by receives, per topic and subscription (first ones and redeliveries).
pub const DELIVERED_MESSAGES: &str = "wharf_delivered_messages_total";
/// Value bytes delivered, per topic and subscription.
pub const DELIVERED_BYTES: &str = "wharf_delivered_bytes_total";
/// Redeliveries, per topic and subscription.
pub const REDELIVERED_MESSAGES: &str = "wharf_redelivered_messages_total";
/// Receipts that took effect, per topic, subscription and action (`ack`, `nack`, `extend`).
pub const SETTLED_MESSAGES: &str = "wharf_settled_messages_total";
/// Messages moved to a dead-letter topic, per topic and subscription.
pub const DEAD_LETTERED_MESSAGES: &str = "wharf_dead_lettered_messages_total";
/// Messages a subscription skipped because the log could not read them (a damaged frame),
/// per topic and subscription. Anything above 0 means disk damage: see the error log.
pub const UNREADABLE_MESSAGES: &str = "wharf_unreadable_messages_total";
/// Produce requests handed to a partition writer per group commit (one fsync).
pub const GROUP_COMMIT_REQUESTS: &str = "wharf_group_commit_requests";
/// Bytes written per group commit.
pub const GROUP_COMMIT_BYTES: &str = "wharf_group_commit_bytes";
/// Time one fsync of a segment took.
pub const FSYNC_SECONDS: &str = "wharf_fsync_seconds";
/// Requests waiting in partition writer queues when a writer takes its next group.
pub const WRITER_QUEUE_DEPTH: &str = "wharf_writer_queue_depth";
/// In a cluster, time from proposing an entry on a partition's leader to its commit and
/// apply there (a majority fsynced it): what replication adds to a produce, a lease or a
/// settle.
pub const RAFT_COMMIT_SECONDS: &str = "wharf_raft_commit_seconds";

/// In a cluster, time a partition's replicated writes spend in each stage on their way to an
/// answer, by `stage` (see [`WriteStage`]): what [`RAFT_COMMIT_SECONDS`] is made of.
pub const WRITE_STAGE_SECONDS: &str = "wharf_write_stage_seconds";
/// In a cluster, appends of entries a follower refused because it was still taking the
/// group's previous one (the leader backs off and sends them again).
pub const APPENDS_REFUSED_BUSY: &str = "wharf_raft_appends_busy_total";

/// In a cluster, how receives proved that their node still led the partition before handing
/// anything out, by `how`: `lease` (a write or round a quorum took within the read lease),
/// `round` (a heartbeat round sent for it), `commit` (neither: the receive waited for its
/// leases to commit).
pub const LEADERSHIP_PROOFS: &str = "wharf_receive_leadership_proofs_total";

/// A stage of a replicated write, the `stage` label of [`WRITE_STAGE_SECONDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStage {
    /// On the leader: a proposal waiting in its partition's writer for a place in Raft
    /// (`raft::coalesce::MAX_WRITES_IN_FLIGHT` entries of its lane at a time).
    Queue,
    /// On any replica: entries written to this node's log until they are durable (fsynced,
    /// or written under `fsync never`); the controller's rare metadata entries count too.
    LogAppend,
    /// On the leader: an append of entries sent to one follower until its answer (the
    /// network both ways and the follower's own append included).
    Replicate,
    /// On a follower: an append of entries from its arrival to its answer.
    FollowerAppend,
    /// On any replica: committed entries applied to the partition (made visible, answers
    /// computed).
    Apply,
}

impl WriteStage {
    /// Every stage, in the order a write meets them.
    pub const ALL: [WriteStage; 5] = [
        WriteStage::Queue,
        WriteStage::LogAppend,
        WriteStage::Replicate,
        WriteStage::FollowerAppend,
        WriteStage::Apply,
    ];

    /// Its `stage` label.
    pub fn label(self) -> &'static str {
        match self {
            WriteStage::Queue => "queue",
            WriteStage::LogAppend => "log_append",
            WriteStage::Replicate => "replicate",
            WriteStage::FollowerAppend => "follower_append",
            WriteStage::Apply => "apply",
        }
    }
}

/// Records `seconds` spent in `stage` by one replicated write (or one batch of entries).
pub fn write_stage(stage: WriteStage, seconds: f64) {
    static STAGES: OnceLock<Vec<metrics::Histogram>> = OnceLock::new();
    let stages = STAGES.get_or_init(|| {
        WriteStage::ALL
            .iter()
            .map(|s| histogram!(WRITE_STAGE_SECONDS, "stage" => s.label()))
            .collect()
    });
    if let Some(histogram) = stages.get(stage as usize) {
        histogram.record(seconds);
    }
}

/// How a receive proved that its node still led its partition (the `how` label of
/// [`LEADERSHIP_PROOFS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadershipProof {
    /// By a quorum's answer within the read lease.
    Lease,
    /// By a heartbeat round sent for it.
    Round,
    /// By the commit of its leases.
    Commit,
}

/// Counts how one receive proved its node still led.
pub fn leadership_proved(proof: LeadershipProof) {
    static HOW: OnceLock<[Counter; 3]> = OnceLock::new();
    let [lease, round, commit] = HOW.get_or_init(|| {
        ["lease", "round", "commit"].map(|how| counter!(LEADERSHIP_PROOFS, "how" => how))
    });
    match proof {
        LeadershipProof::Lease => lease.increment(1),
        LeadershipProof::Round => round.increment(1),
        LeadershipProof::Commit => commit.increment(1),
    }
}

/// Counts one append a follower refused as busy.
pub fn append_refused_busy() {
    static BUSY: OnceLock<Counter> = OnceLock::new();
    BUSY.get_or_init(|| counter!(APPENDS_REFUSED_BUSY))
        .increment(1);
}

/// Registers the descriptions and units of every broker metric with the installed recorder.
pub fn describe() {
    describe_messages();
    describe_writes();
    describe_cluster();
}

/// Registers the descriptions of the message counters: produced, delivered, settled,
/// dead-lettered and unreadable messages.
fn describe_messages() {
    describe_counter!(
        PRODUCED_MESSAGES,
        Unit::Count,
        "Messages stored by produces, per topic."
    );
    describe_counter!(
        PRODUCED_BYTES,
        Unit::Bytes,
        "Value bytes stored by produces, per topic."
    );
    describe_counter!(
        DELIVERED_MESSAGES,
        Unit::Count,
        "Deliveries made by receives (first ones and redeliveries)."
    );
    describe_counter!(
        DELIVERED_BYTES,
        Unit::Bytes,
        "Value bytes delivered by receives."
    );
    describe_counter!(
        REDELIVERED_MESSAGES,
        Unit::Count,
        "Redeliveries made by receives."
    );
    describe_counter!(
        UNREADABLE_MESSAGES,
        Unit::Count,
        "Messages skipped because the log could not read them (disk damage)."
    );
    describe_counter!(
        SETTLED_MESSAGES,
        Unit::Count,
        "Receipts that took effect, by action (ack, nack, extend)."
    );
    describe_counter!(
        DEAD_LETTERED_MESSAGES,
        Unit::Count,
        "Messages moved to a dead-letter topic."
    );
}

/// Registers the descriptions of the partition writers' metrics: group commits, fsyncs and
/// queue depth.
fn describe_writes() {
    describe_histogram!(
        GROUP_COMMIT_REQUESTS,
        Unit::Count,
        "Produce requests per group commit (one fsync)."
    );
    describe_histogram!(
        GROUP_COMMIT_BYTES,
        Unit::Bytes,
        "Bytes written per group commit."
    );
    describe_histogram!(
        FSYNC_SECONDS,
        Unit::Seconds,
        "Time one fsync of a segment took."
    );
    describe_histogram!(
        WRITER_QUEUE_DEPTH,
        Unit::Count,
        "Requests queued at a partition writer when it takes its next group."
    );
}

/// Registers the descriptions of the metrics only a cluster records: replicated writes,
/// leadership proofs and busy appends.
fn describe_cluster() {
    describe_histogram!(
        RAFT_COMMIT_SECONDS,
        Unit::Seconds,
        "In a cluster: time from proposing an entry on a partition's leader to its commit."
    );
    describe_histogram!(
        WRITE_STAGE_SECONDS,
        Unit::Seconds,
        "In a cluster: time replicated writes spend in each stage (queue, log_append, replicate, follower_append, apply)."
    );
    describe_counter!(
        LEADERSHIP_PROOFS,
        Unit::Count,
        "In a cluster: how receives proved their node still led (lease, round, commit)."
    );
    describe_counter!(
        APPENDS_REFUSED_BUSY,
        Unit::Count,
        "In a cluster: appends a follower refused while it took the group's previous one."
    );
}

/// A topic's produce counters, registered with the recorder on first use and then counted
/// without a registry lookup (and its label allocations) per request. The gateway installs
/// its recorder before it opens the broker; a counter first used before any recorder is
/// installed stays a no-op.
///
/// Beside the recorder's counters it keeps plain atomic totals ([`TopicTotals`]) that the
/// per-minute history samples (relaxed adds: no lock on the produce or receive path).
#[derive(Debug, Default)]
pub(crate) struct TopicCounters {
    produced: OnceLock<[Counter; 2]>,
    produced_messages: AtomicU64,
    produced_bytes: AtomicU64,
    consumed_messages: AtomicU64,
    consumed_bytes: AtomicU64,
}

/// A topic's cumulative totals since the topic was opened on this node (a restart or a
/// recreated topic starts them at 0 again), read by the per-minute history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicTotals {
    /// Messages stored by produces handled on this node.
    pub produced_messages: u64,
    /// Value bytes stored by those produces.
    pub produced_bytes: u64,
    /// Deliveries made on this node, over all the topic's subscriptions.
    pub consumed_messages: u64,
    /// Value bytes of those deliveries.
    pub consumed_bytes: u64,
}

/// A subscription's cumulative totals since it was opened on this node, read by the
/// per-minute history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionTotals {
    /// Deliveries made on this node (first ones and redeliveries).
    pub delivered_messages: u64,
    /// Value bytes of those deliveries.
    pub delivered_bytes: u64,
    /// Messages acked.
    pub acks: u64,
    /// Messages nacked.
    pub nacks: u64,
    /// Messages moved to the dead-letter topic.
    pub dead_letters: u64,
}

impl TopicCounters {
    /// Counts messages and value bytes stored by a produce to `topic`.
    pub(crate) fn produced(&self, topic: &str, messages: usize, bytes: usize) {
        let [stored, stored_bytes] = self.produced.get_or_init(|| {
            let topic = topic.to_owned();
            [
                counter!(PRODUCED_MESSAGES, "topic" => topic.clone()),
                counter!(PRODUCED_BYTES, "topic" => topic),
            ]
        });
        stored.increment(messages as u64);
        stored_bytes.increment(bytes as u64);
        self.produced_messages
            .fetch_add(messages as u64, Ordering::Relaxed);
        self.produced_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Counts deliveries from the topic (the subscription's own counters name it).
    pub(crate) fn consumed(&self, messages: usize, bytes: usize) {
        self.consumed_messages
            .fetch_add(messages as u64, Ordering::Relaxed);
        self.consumed_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The totals so far.
    pub(crate) fn totals(&self) -> TopicTotals {
        TopicTotals {
            produced_messages: self.produced_messages.load(Ordering::Relaxed),
            produced_bytes: self.produced_bytes.load(Ordering::Relaxed),
            consumed_messages: self.consumed_messages.load(Ordering::Relaxed),
            consumed_bytes: self.consumed_bytes.load(Ordering::Relaxed),
        }
    }
}

/// A subscription's delivery and settle counters, registered on first use as
/// [`TopicCounters`] are.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionCounters {
    delivered: OnceLock<[Counter; 3]>,
    acked: OnceLock<Counter>,
    nacked: OnceLock<Counter>,
    extended: OnceLock<Counter>,
    /// Steady ms of the last receive plus one (0: none since the node started).
    last_receive: AtomicU64,
    delivered_messages: AtomicU64,
    delivered_bytes: AtomicU64,
    acks: AtomicU64,
    nacks: AtomicU64,
    dead_letters: AtomicU64,
}

/// What a settle did, for [`SETTLED_MESSAGES`]'s `action` label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SettleAction {
    /// `ack`.
    Ack,
    /// `nack`.
    Nack,
    /// `extend`.
    Extend,
}

impl SubscriptionCounters {
    /// Notes that a receive reached the subscription at steady `now_ms`.
    pub(crate) fn received_at(&self, now_ms: u64) {
        self.last_receive
            .fetch_max(now_ms.saturating_add(1), Ordering::Relaxed);
    }

    /// Steady ms of the last receive, `None` if none since the node started.
    pub(crate) fn last_receive_ms(&self) -> Option<u64> {
        self.last_receive.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Counts a receive's deliveries (`redelivered` of them not for the first time).
    pub(crate) fn delivered(
        &self,
        topic: &str,
        subscription: &str,
        messages: usize,
        redelivered: usize,
        bytes: usize,
    ) {
        let [delivered, delivered_bytes, again] = self.delivered.get_or_init(|| {
            let labels = labels(topic, subscription);
            [
                counter!(DELIVERED_MESSAGES, &labels),
                counter!(DELIVERED_BYTES, &labels),
                counter!(REDELIVERED_MESSAGES, &labels),
            ]
        });
        delivered.increment(messages as u64);
        delivered_bytes.increment(bytes as u64);
        self.delivered_messages
            .fetch_add(messages as u64, Ordering::Relaxed);
        self.delivered_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        if redelivered > 0 {
            again.increment(redelivered as u64);
        }
    }

    /// Counts messages a settle request acked, nacked or extended.
    pub(crate) fn settled(
        &self,
        topic: &str,
        subscription: &str,
        action: SettleAction,
        messages: usize,
    ) {
        let (cell, name) = match action {
            SettleAction::Ack => (&self.acked, "ack"),
            SettleAction::Nack => (&self.nacked, "nack"),
            SettleAction::Extend => (&self.extended, "extend"),
        };
        match action {
            SettleAction::Ack => self.acks.fetch_add(messages as u64, Ordering::Relaxed),
            SettleAction::Nack => self.nacks.fetch_add(messages as u64, Ordering::Relaxed),
            SettleAction::Extend => 0,
        };
        let settled = cell.get_or_init(|| {
            let [topic, subscription] = labels(topic, subscription);
            let labels = [topic, subscription, ("action", name.to_owned())];
            counter!(SETTLED_MESSAGES, &labels)
        });
        settled.increment(messages as u64);
    }

    /// Counts messages moved to the dead-letter topic (the recorder's counter is
    /// [`dead_lettered`]).
    pub(crate) fn dead_lettered(&self, messages: usize) {
        self.dead_letters
            .fetch_add(messages as u64, Ordering::Relaxed);
    }

    /// The totals so far.
    pub(crate) fn totals(&self) -> SubscriptionTotals {
        SubscriptionTotals {
            delivered_messages: self.delivered_messages.load(Ordering::Relaxed),
            delivered_bytes: self.delivered_bytes.load(Ordering::Relaxed),
            acks: self.acks.load(Ordering::Relaxed),
            nacks: self.nacks.load(Ordering::Relaxed),
            dead_letters: self.dead_letters.load(Ordering::Relaxed),
        }
    }
}

fn labels(topic: &str, subscription: &str) -> [(&'static str, String); 2] {
    [
        ("topic", topic.to_owned()),
        ("subscription", subscription.to_owned()),
    ]
}

pub(crate) fn unreadable(topic: &str, subscription: &str, messages: u64) {
    counter!(UNREADABLE_MESSAGES, &labels(topic, subscription)).increment(messages);
}

pub(crate) fn dead_lettered(topic: &str, subscription: &str, messages: usize) {
    counter!(DEAD_LETTERED_MESSAGES, &labels(topic, subscription)).increment(messages as u64);
}

/// Records one group commit of a partition writer.
pub fn group_commit(requests: usize, bytes: usize, queue_depth: usize) {
    histogram!(GROUP_COMMIT_REQUESTS).record(requests as f64);
    histogram!(GROUP_COMMIT_BYTES).record(bytes as f64);
    histogram!(WRITER_QUEUE_DEPTH).record(queue_depth as f64);
}

/// Records one fsync.
pub fn fsync(seconds: f64) {
    histogram!(FSYNC_SECONDS).record(seconds);
}

/// Records one committed proposal on a partition's leader.
pub fn raft_commit(seconds: f64) {
    static COMMITS: OnceLock<metrics::Histogram> = OnceLock::new();
    COMMITS
        .get_or_init(|| histogram!(RAFT_COMMIT_SECONDS))
        .record(seconds);
}
