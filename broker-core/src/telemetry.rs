//! The broker's metrics, recorded through the `metrics` facade (a no-op until a recorder is
//! installed; the gateway installs a Prometheus one and serves `/metrics`). The names are API
//! for dashboards and alerts: keep them stable.

use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

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

/// Registers the descriptions and units of every broker metric with the installed recorder.
pub fn describe() {
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

pub(crate) fn produced(topic: &str, messages: usize, bytes: usize) {
    let topic = topic.to_owned();
    counter!(PRODUCED_MESSAGES, "topic" => topic.clone()).increment(messages as u64);
    counter!(PRODUCED_BYTES, "topic" => topic).increment(bytes as u64);
}

pub(crate) fn delivered(
    topic: &str,
    subscription: &str,
    messages: usize,
    redelivered: usize,
    bytes: usize,
) {
    let labels = [
        ("topic", topic.to_owned()),
        ("subscription", subscription.to_owned()),
    ];
    counter!(DELIVERED_MESSAGES, &labels).increment(messages as u64);
    counter!(DELIVERED_BYTES, &labels).increment(bytes as u64);
    if redelivered > 0 {
        counter!(REDELIVERED_MESSAGES, &labels).increment(redelivered as u64);
    }
}

pub(crate) fn settled(topic: &str, subscription: &str, action: &'static str, messages: usize) {
    let labels = [
        ("topic", topic.to_owned()),
        ("subscription", subscription.to_owned()),
        ("action", action.to_owned()),
    ];
    counter!(SETTLED_MESSAGES, &labels).increment(messages as u64);
}

pub(crate) fn unreadable(topic: &str, subscription: &str, messages: u64) {
    let labels = [
        ("topic", topic.to_owned()),
        ("subscription", subscription.to_owned()),
    ];
    counter!(UNREADABLE_MESSAGES, &labels).increment(messages);
}

pub(crate) fn dead_lettered(topic: &str, subscription: &str, messages: usize) {
    let labels = [
        ("topic", topic.to_owned()),
        ("subscription", subscription.to_owned()),
    ];
    counter!(DEAD_LETTERED_MESSAGES, &labels).increment(messages as u64);
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
