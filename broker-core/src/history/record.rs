//! [`MinuteRecord`]: one minute of one series. A series has `C` counters, each the increase
//! of a cumulative total within the minute, and `G` gauges, each the last and largest value
//! sampled in the minute. A topic's series is a [`TopicMinute`]; a subscription's a
//! [`SubscriptionMinute`]; the figures are named by [`TopicCounter`], [`TopicGauge`],
//! [`SubscriptionCounter`] and [`SubscriptionGauge`].

use super::MAX_MINUTE;

/// A gauge over one minute: its last sampled value and the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GaugeMinute {
    /// The value of the minute's last sample.
    pub last: u64,
    /// The largest value sampled in the minute; never below `last`.
    pub max: u64,
}

impl GaugeMinute {
    /// A gauge whose minute has one sample, `value`.
    pub const fn of(value: u64) -> Self {
        GaugeMinute {
            last: value,
            max: value,
        }
    }

    /// Takes a later sample of the same minute.
    pub fn observe(&mut self, value: u64) {
        self.last = value;
        self.max = self.max.max(value);
    }
}

/// One minute of a series with `C` counters and `G` gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinuteRecord<const C: usize, const G: usize> {
    /// The minute: [`minute_of`](super::minute_of) the samples it holds; at most
    /// [`MAX_MINUTE`].
    pub minute: u64,
    /// Each counter's increase within the minute.
    pub counters: [u64; C],
    /// Each gauge's last and largest value within the minute.
    pub gauges: [GaugeMinute; G],
}

impl<const C: usize, const G: usize> MinuteRecord<C, G> {
    /// How many counters a record of this series holds.
    pub const COUNTERS: usize = C;
    /// How many gauges a record of this series holds.
    pub const GAUGES: usize = G;

    /// A minute with every counter at 0 and every gauge at its one sample.
    pub fn starting(minute: u64, gauges: [u64; G]) -> Self {
        MinuteRecord {
            minute,
            counters: [0; C],
            gauges: gauges.map(GaugeMinute::of),
        }
    }

    /// Checks the invariants a record keeps: its minute is at most [`MAX_MINUTE`] and no
    /// gauge's last value is above its largest.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.minute > MAX_MINUTE {
            return Err("the minute is past the last minute there is");
        }
        if self.gauges.iter().any(|gauge| gauge.last > gauge.max) {
            return Err("a gauge's last value is above its largest");
        }
        Ok(())
    }
}

/// A topic's minute: the [`TopicCounter`]s and [`TopicGauge`]s.
pub type TopicMinute = MinuteRecord<{ TopicCounter::ALL.len() }, { TopicGauge::ALL.len() }>;

/// A subscription's minute: the [`SubscriptionCounter`]s and [`SubscriptionGauge`]s.
pub type SubscriptionMinute =
    MinuteRecord<{ SubscriptionCounter::ALL.len() }, { SubscriptionGauge::ALL.len() }>;

/// A topic's counters, in the order of [`MinuteRecord::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicCounter {
    /// Messages produced to the topic.
    ProducedMessages,
    /// Payload bytes produced to the topic.
    ProducedBytes,
    /// Messages delivered from the topic, over all its subscriptions.
    ConsumedMessages,
    /// Payload bytes delivered from the topic, over all its subscriptions.
    ConsumedBytes,
    /// Produce requests to the topic that failed.
    ProduceErrors,
}

impl TopicCounter {
    /// Every counter, in record order.
    pub const ALL: [TopicCounter; 5] = [
        TopicCounter::ProducedMessages,
        TopicCounter::ProducedBytes,
        TopicCounter::ConsumedMessages,
        TopicCounter::ConsumedBytes,
        TopicCounter::ProduceErrors,
    ];

    /// Its name in the API (`produced_messages`, …).
    pub const fn name(self) -> &'static str {
        match self {
            TopicCounter::ProducedMessages => "produced_messages",
            TopicCounter::ProducedBytes => "produced_bytes",
            TopicCounter::ConsumedMessages => "consumed_messages",
            TopicCounter::ConsumedBytes => "consumed_bytes",
            TopicCounter::ProduceErrors => "produce_errors",
        }
    }

    /// Its index in [`MinuteRecord::counters`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A topic's gauges, in the order of [`MinuteRecord::gauges`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicGauge {
    /// The 99th percentile of the latency of the requests on the topic answered in the
    /// minute so far, ms (0 with no request).
    LatencyP99Ms,
}

impl TopicGauge {
    /// Every gauge, in record order.
    pub const ALL: [TopicGauge; 1] = [TopicGauge::LatencyP99Ms];

    /// Its name in the API (`latency_p99_ms`).
    pub const fn name(self) -> &'static str {
        match self {
            TopicGauge::LatencyP99Ms => "latency_p99_ms",
        }
    }

    /// Its index in [`MinuteRecord::gauges`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A subscription's counters, in the order of [`MinuteRecord::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubscriptionCounter {
    /// Messages acked.
    Acks,
    /// Messages nacked.
    Nacks,
    /// Messages moved to the dead-letter queue.
    DeadLetters,
    /// Deliveries made (first ones and redeliveries).
    DeliveredMessages,
}

impl SubscriptionCounter {
    /// Every counter, in record order.
    pub const ALL: [SubscriptionCounter; 4] = [
        SubscriptionCounter::Acks,
        SubscriptionCounter::Nacks,
        SubscriptionCounter::DeadLetters,
        SubscriptionCounter::DeliveredMessages,
    ];

    /// Its name in the API (`acks`, …).
    pub const fn name(self) -> &'static str {
        match self {
            SubscriptionCounter::Acks => "acks",
            SubscriptionCounter::Nacks => "nacks",
            SubscriptionCounter::DeadLetters => "dead_letters",
            SubscriptionCounter::DeliveredMessages => "delivered_messages",
        }
    }

    /// Its index in [`MinuteRecord::counters`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A subscription's gauges, in the order of [`MinuteRecord::gauges`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubscriptionGauge {
    /// Messages not yet acked or dead-lettered.
    Backlog,
    /// Age of the oldest message not yet acked, ms (0 when the backlog is empty).
    OldestUnackedAgeMs,
}

impl SubscriptionGauge {
    /// Every gauge, in record order.
    pub const ALL: [SubscriptionGauge; 2] = [
        SubscriptionGauge::Backlog,
        SubscriptionGauge::OldestUnackedAgeMs,
    ];

    /// Its name in the API (`backlog`, …).
    pub const fn name(self) -> &'static str {
        match self {
            SubscriptionGauge::Backlog => "backlog",
            SubscriptionGauge::OldestUnackedAgeMs => "oldest_unacked_age_ms",
        }
    }

    /// Its index in [`MinuteRecord::gauges`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl TopicMinute {
    /// The increase of `counter` within the minute.
    pub fn counter(&self, counter: TopicCounter) -> u64 {
        self.counters[counter.index()]
    }

    /// The last and largest value of `gauge` within the minute.
    pub fn gauge(&self, gauge: TopicGauge) -> GaugeMinute {
        self.gauges[gauge.index()]
    }
}

impl SubscriptionMinute {
    /// The increase of `counter` within the minute.
    pub fn counter(&self, counter: SubscriptionCounter) -> u64 {
        self.counters[counter.index()]
    }

    /// The last and largest value of `gauge` within the minute.
    pub fn gauge(&self, gauge: SubscriptionGauge) -> GaugeMinute {
        self.gauges[gauge.index()]
    }
}
