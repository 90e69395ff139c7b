//! Per-minute history, wired (issue 12): [`History`] holds each topic's and subscription's
//! [`MinuteAggregator`](broker_core::history::MinuteAggregator) and
//! [`MinuteRing`](broker_core::history::MinuteRing); the [`sampler`] feeds them every
//! [`SAMPLE_EVERY`] from the broker's counters ([`broker_core::broker::TopicHistoryTotals`]),
//! the subscriptions' backlogs and the request figures ([`requests`]), and writes finished
//! minutes to the [`files`]; `routes::stats` answers from it.
//!
//! In a cluster each node samples only what it serves: the broker counts the produces and
//! deliveries it makes itself (a partition's leader), the backlogs are those of the
//! partitions it leads, and a request is counted on the node it entered (a forwarded one is
//! not counted again), so the routes sum the nodes' answers without counting anything twice.
//!
//! The lock here is taken by the sampler and the stats routes only, never by produce or
//! receive.

pub mod files;
pub(crate) mod requests;
pub mod sampler;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use broker_core::broker::TopicHistoryTotals;
use broker_core::history::{
    MinuteRecord, RetentionMinutes, SubscriptionAggregator, SubscriptionMinute, SubscriptionRing,
    TopicAggregator, TopicMinute, TopicRing, minute_of,
};
use broker_core::sync::lock;

use self::files::{HistoryFiles, Loaded, SeriesKey};
use self::requests::{LATENCY_BUCKETS, LatencyCounts, RequestFigures, p99_ms};
use crate::governance::produce_errors::ProduceErrors;

/// How often the sampler reads the counters: a minute's record holds six samples, and a
/// fresh server shows traffic within this long.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// The clock of the history, steady epoch ms; a test may set its own.
#[derive(Clone)]
pub struct HistoryClock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl HistoryClock {
    /// The broker's steady clock ([`broker_core::clock::steady_ms`]).
    pub fn steady() -> Self {
        HistoryClock(Arc::new(broker_core::clock::steady_ms))
    }

    /// A clock reading `now`; it must never go back.
    pub fn new(now: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        HistoryClock(Arc::new(now))
    }

    /// Now, epoch ms.
    pub fn now_ms(&self) -> u64 {
        (self.0)()
    }
}

impl fmt::Debug for HistoryClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HistoryClock")
    }
}

/// Test hooks: another clock and sample interval, so a test sees minutes pass without
/// waiting for them.
#[derive(Debug, Clone)]
pub struct HistoryHooks {
    /// The clock.
    pub clock: HistoryClock,
    /// How often the sampler samples.
    pub sample_every: Duration,
}

/// A topic's series.
#[derive(Debug)]
struct TopicSeries {
    aggregator: TopicAggregator,
    ring: TopicRing,
    /// The latency counts of the minute being filled, and that minute.
    latency: (u64, LatencyCounts),
    /// Whether the aggregator has had a sample.
    sampled: bool,
}

/// A subscription's series.
#[derive(Debug)]
struct SubscriptionSeries {
    aggregator: SubscriptionAggregator,
    ring: SubscriptionRing,
    /// Whether the aggregator has had a sample.
    sampled: bool,
}

/// Every series of this node.
#[derive(Debug, Default)]
struct Series {
    topics: BTreeMap<String, TopicSeries>,
    subscriptions: BTreeMap<(String, String), SubscriptionSeries>,
}

/// One sample of one subscription's gauges on this node: backlog and oldest unacked age over
/// the partitions it serves.
pub type SubscriptionGauges = HashMap<(String, String), [u64; 2]>;

/// What a sample leaves for the file layer.
#[derive(Debug, Default)]
pub struct Finished {
    /// Finished topic minutes.
    pub topics: Vec<(SeriesKey, TopicMinute)>,
    /// Finished subscription minutes.
    pub subscriptions: Vec<(SeriesKey, SubscriptionMinute)>,
    /// Series gone (their topic or subscription was deleted).
    pub removed: Vec<SeriesKey>,
}

/// The per-minute history of one node (see the module docs).
#[derive(Debug)]
pub struct History {
    retention: RetentionMinutes,
    clock: HistoryClock,
    sample_every: Duration,
    files: Option<HistoryFiles>,
    /// Request figures per topic, counted by the request middleware.
    pub requests: RequestFigures,
    /// Failed produce requests, counted by the request middleware: the node's one counter,
    /// which the alerts read too ([`crate::governance::alerts::Alerts::start`]).
    pub produce_errors: Arc<ProduceErrors>,
    series: Mutex<Series>,
    /// Whether it is kept (see [`History::off`]).
    on: bool,
}

impl History {
    /// A history keeping `retention` minutes per series, in memory only (no files): what an
    /// app built without [`crate::serve`] gets; nothing samples it.
    pub fn in_memory(retention: RetentionMinutes) -> Self {
        History {
            retention,
            clock: HistoryClock::steady(),
            sample_every: SAMPLE_EVERY,
            files: None,
            requests: RequestFigures::default(),
            produce_errors: Arc::default(),
            series: Mutex::default(),
            on: true,
        }
    }

    /// A history that keeps nothing (the server runs with `history = false`): nothing
    /// samples it, the request middleware records no figures in it and its routes answer
    /// 501; only its produce error count goes on, which the alerts read.
    pub fn off() -> Self {
        History {
            on: false,
            ..History::in_memory(RetentionMinutes::default())
        }
    }

    /// Whether it is kept: false for [`History::off`].
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// A history with its files under `data_dir` and the minutes they keep loaded (blocking:
    /// call it on the blocking pool), with `hooks` if a test gives them.
    pub fn open(
        data_dir: &std::path::Path,
        retention: RetentionMinutes,
        hooks: Option<HistoryHooks>,
    ) -> std::io::Result<Self> {
        let files = HistoryFiles::new(data_dir, retention);
        let loaded = files.load()?;
        let mut history = History::in_memory(retention);
        if let Some(hooks) = hooks {
            history.clock = hooks.clock;
            history.sample_every = hooks.sample_every;
        }
        history.files = Some(files);
        history.restore(loaded);
        Ok(history)
    }

    fn restore(&mut self, loaded: Loaded) {
        let retention = self.retention;
        let series = match self.series.get_mut() {
            Ok(series) => series,
            Err(poisoned) => poisoned.into_inner(),
        };
        for (topic, mut records) in loaded.topics {
            records.sort_unstable_by_key(|r| r.minute);
            let entry = series
                .topics
                .entry(topic)
                .or_insert_with(|| new_topic(retention));
            for record in records {
                let _ = entry.ring.insert(record);
            }
        }
        for (key, mut records) in loaded.subscriptions {
            records.sort_unstable_by_key(|r| r.minute);
            let entry = series
                .subscriptions
                .entry(key)
                .or_insert_with(|| new_subscription(retention));
            for record in records {
                let _ = entry.ring.insert(record);
            }
        }
    }

    /// Now, by the history's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// How often the sampler samples.
    pub fn sample_every(&self) -> Duration {
        self.sample_every
    }

    /// The file layer, if any.
    pub fn files(&self) -> Option<&HistoryFiles> {
        self.files.as_ref()
    }

    /// Takes one sample at `now_ms`: each topic's and subscription's totals, gauges and the
    /// request figures. Series whose topic or subscription is gone are dropped. Returns the
    /// minutes finished and the series removed, for the files.
    pub fn observe(
        &self,
        now_ms: u64,
        totals: &[TopicHistoryTotals],
        gauges: &SubscriptionGauges,
    ) -> Finished {
        let retention = self.retention;
        let minute = minute_of(now_ms);
        let mut finished = Finished::default();
        let mut series = lock(&self.series);
        let existing: std::collections::HashSet<&str> =
            totals.iter().map(|t| t.name.as_str()).collect();
        self.requests.prune(&existing);
        self.produce_errors.prune(&existing);
        let gone: Vec<String> = series
            .topics
            .keys()
            .filter(|name| !existing.contains(name.as_str()))
            .cloned()
            .collect();
        for topic in gone {
            series.topics.remove(&topic);
            finished.removed.push(SeriesKey::Topic(topic));
        }
        let subscriptions: std::collections::HashSet<(&str, &str)> = totals
            .iter()
            .flat_map(|t| {
                t.subscriptions
                    .iter()
                    .map(|(s, _)| (t.name.as_str(), s.as_str()))
            })
            .collect();
        let gone: Vec<(String, String)> = series
            .subscriptions
            .keys()
            .filter(|(t, s)| !subscriptions.contains(&(t.as_str(), s.as_str())))
            .cloned()
            .collect();
        for key in gone {
            series.subscriptions.remove(&key);
            if existing.contains(key.0.as_str()) {
                finished.removed.push(SeriesKey::Subscription(key.0, key.1));
            }
        }
        for topic in totals {
            let counts = self.requests.take(&topic.name);
            let errors = self.produce_errors.total(Some(&topic.name));
            let entry = series
                .topics
                .entry(topic.name.clone())
                .or_insert_with(|| new_topic(retention));
            if entry.latency.0 != minute {
                entry.latency = (minute, [0; LATENCY_BUCKETS]);
            }
            for (sum, count) in entry.latency.1.iter_mut().zip(counts) {
                *sum += count;
            }
            let t = &topic.totals;
            let counters = [
                t.produced_messages,
                t.produced_bytes,
                t.consumed_messages,
                t.consumed_bytes,
                errors,
            ];
            let p99 = p99_ms(&entry.latency.1);
            if !entry.sampled {
                // Every total starts at 0 when its topic opens on this node (and the request
                // figures when first counted): a zero baseline counts what came before the
                // series' first sample.
                entry.sampled = true;
                let _ = entry
                    .aggregator
                    .observe(now_ms, [0; TopicMinute::COUNTERS], [p99]);
            }
            if let Ok(Some(record)) = entry.aggregator.observe(now_ms, counters, [p99]) {
                let record = keep(&mut entry.ring, record);
                finished
                    .topics
                    .push((SeriesKey::Topic(topic.name.clone()), record));
            }
            for (name, s) in &topic.subscriptions {
                let key = (topic.name.clone(), name.clone());
                let gauge = gauges.get(&key).copied().unwrap_or_default();
                let entry = series
                    .subscriptions
                    .entry(key)
                    .or_insert_with(|| new_subscription(retention));
                let counters = [s.acks, s.nacks, s.dead_letters, s.delivered_messages];
                if !entry.sampled {
                    entry.sampled = true;
                    let _ =
                        entry
                            .aggregator
                            .observe(now_ms, [0; SubscriptionMinute::COUNTERS], gauge);
                }
                if let Ok(Some(record)) = entry.aggregator.observe(now_ms, counters, gauge) {
                    let record = keep(&mut entry.ring, record);
                    let key = SeriesKey::Subscription(topic.name.clone(), name.clone());
                    finished.subscriptions.push((key, record));
                }
            }
        }
        finished
    }

    /// Closes every minute being filled (the node stops): they go to the rings and are
    /// returned for the files.
    pub fn close_all(&self) -> Finished {
        let mut finished = Finished::default();
        let mut series = lock(&self.series);
        for (name, entry) in &mut series.topics {
            if let Some(record) = entry.aggregator.close() {
                let record = keep(&mut entry.ring, record);
                finished
                    .topics
                    .push((SeriesKey::Topic(name.clone()), record));
            }
        }
        for ((topic, name), entry) in &mut series.subscriptions {
            if let Some(record) = entry.aggregator.close() {
                let record = keep(&mut entry.ring, record);
                let key = SeriesKey::Subscription(topic.clone(), name.clone());
                finished.subscriptions.push((key, record));
            }
        }
        finished
    }

    /// Bytes the series' rings take ([`MinuteRing::allocated_bytes`] summed): at most
    /// [`MinuteRing::memory_bytes`] of the retention per topic and subscription there is,
    /// as series of deleted ones are dropped at the next sample.
    ///
    /// [`MinuteRing::allocated_bytes`]: broker_core::history::MinuteRing::allocated_bytes
    /// [`MinuteRing::memory_bytes`]: broker_core::history::MinuteRing::memory_bytes
    pub fn memory_bytes(&self) -> usize {
        let series = lock(&self.series);
        let topics: usize = series
            .topics
            .values()
            .map(|entry| entry.ring.allocated_bytes())
            .sum();
        let subscriptions: usize = series
            .subscriptions
            .values()
            .map(|entry| entry.ring.allocated_bytes())
            .sum();
        topics + subscriptions
    }

    /// `topic`'s records of the `minutes` ending with the current one (the minute being
    /// filled included), oldest first; `None` if the topic has no series here.
    pub fn topic_points(&self, topic: &str, minutes: u64) -> Option<Vec<TopicMinute>> {
        let now = minute_of(self.now_ms());
        let series = lock(&self.series);
        let entry = series.topics.get(topic)?;
        Some(window(
            &entry.ring,
            entry.aggregator.open_minute(),
            now,
            minutes,
        ))
    }

    /// `topic`/`subscription`'s records, as [`History::topic_points`].
    pub fn subscription_points(
        &self,
        topic: &str,
        subscription: &str,
        minutes: u64,
    ) -> Option<Vec<SubscriptionMinute>> {
        let now = minute_of(self.now_ms());
        let series = lock(&self.series);
        let key = (topic.to_owned(), subscription.to_owned());
        let entry = series.subscriptions.get(&key)?;
        Some(window(
            &entry.ring,
            entry.aggregator.open_minute(),
            now,
            minutes,
        ))
    }

    /// Each topic's `value` of its records of the last `minutes` (as
    /// [`History::topic_points`]), for the topics `readable` accepts and `value` gives one
    /// for. One series' window is copied at a time, so a ranking holds at most a day of one
    /// series' records besides the values.
    pub fn rank_topics(
        &self,
        minutes: u64,
        readable: impl Fn(&str) -> bool,
        value: impl Fn(&[TopicMinute]) -> Option<u64>,
    ) -> Vec<(String, u64)> {
        let now = minute_of(self.now_ms());
        let series = lock(&self.series);
        series
            .topics
            .iter()
            .filter(|(name, _)| readable(name))
            .filter_map(|(name, entry)| {
                let records = window(&entry.ring, entry.aggregator.open_minute(), now, minutes);
                Some((name.clone(), value(&records)?))
            })
            .collect()
    }

    /// Each subscription's `value`, as [`History::rank_topics`].
    pub fn rank_subscriptions(
        &self,
        minutes: u64,
        readable: impl Fn(&str) -> bool,
        value: impl Fn(&[SubscriptionMinute]) -> Option<u64>,
    ) -> Vec<((String, String), u64)> {
        let now = minute_of(self.now_ms());
        let series = lock(&self.series);
        series
            .subscriptions
            .iter()
            .filter(|((topic, _), _)| readable(topic))
            .filter_map(|(key, entry)| {
                let records = window(&entry.ring, entry.aggregator.open_minute(), now, minutes);
                Some((key.clone(), value(&records)?))
            })
            .collect()
    }
}

fn new_topic(retention: RetentionMinutes) -> TopicSeries {
    TopicSeries {
        aggregator: TopicAggregator::new(),
        ring: TopicRing::new(retention),
        latency: (0, [0; LATENCY_BUCKETS]),
        sampled: false,
    }
}

fn new_subscription(retention: RetentionMinutes) -> SubscriptionSeries {
    SubscriptionSeries {
        aggregator: SubscriptionAggregator::new(),
        ring: SubscriptionRing::new(retention),
        sampled: false,
    }
}

/// Stores a finished `record` in `ring`, merged with a record of the same minute already
/// there (one a previous run closed when it stopped): returns what the ring now holds.
fn keep<const C: usize, const G: usize>(
    ring: &mut broker_core::history::MinuteRing<C, G>,
    record: MinuteRecord<C, G>,
) -> MinuteRecord<C, G> {
    let merged = match ring.get(record.minute) {
        Some(before) => merge(before, &record),
        None => record,
    };
    if let Err(error) = ring.insert(merged) {
        tracing::debug!(%error, "a history minute was not kept");
    }
    merged
}

/// Two records of the same minute as one: counters added, gauges the later's last value and
/// the larger maximum.
pub fn merge<const C: usize, const G: usize>(
    earlier: &MinuteRecord<C, G>,
    later: &MinuteRecord<C, G>,
) -> MinuteRecord<C, G> {
    let mut merged = *later;
    for (sum, before) in merged.counters.iter_mut().zip(earlier.counters) {
        *sum = sum.saturating_add(before);
    }
    for (gauge, before) in merged.gauges.iter_mut().zip(earlier.gauges) {
        gauge.max = gauge.max.max(before.max);
    }
    merged
}

/// The records of the `minutes` ending with minute `now`: the ring's, then the minute being
/// filled (merged with a ring record of the same minute, if any).
fn window<const C: usize, const G: usize>(
    ring: &broker_core::history::MinuteRing<C, G>,
    open: Option<&MinuteRecord<C, G>>,
    now: u64,
    minutes: u64,
) -> Vec<MinuteRecord<C, G>> {
    let to = now.saturating_add(1);
    let from = to.saturating_sub(minutes);
    let mut records: Vec<MinuteRecord<C, G>> = ring
        .range(from, to)
        .map(|records| records.copied().collect())
        .unwrap_or_default();
    if let Some(open) = open.filter(|open| (from..to).contains(&open.minute)) {
        match records.iter_mut().find(|r| r.minute == open.minute) {
            Some(stored) => *stored = merge(stored, open),
            None => {
                records.push(*open);
                records.sort_unstable_by_key(|r| r.minute);
            }
        }
    }
    records
}
