//! Rate limits (governor's GCRA): per topic in messages/s and bytes/s, counted per message and
//! per byte so batching does not bypass them ([`TopicRateLimits`]), and per principal in
//! requests/s ([`PrincipalRateLimits`]). A refusal is a [`RateLimited`]: 429 `rate_limited`
//! with `Retry-After` and `RateLimit-*` headers.
//!
//! Buckets hold `rate_limit_burst_ms` worth of their rate. Both maps are bounded: idle
//! principals are swept every [`LIMITER_SWEEP_MS`], and past [`MAX_LIMITER_KEYS`] new
//! principals share one overflow bucket rather than grow the map.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use broker_core::sync::lock;
use broker_core::topic::RateLimit;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::limits::{LIMITER_SWEEP_MS, MAX_LIMITER_KEYS};

/// A refused request: which limit, its rate, and when to retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct RateLimited {
    /// What was limited, in words, for the problem detail.
    pub detail: String,
    /// The limit's rate per second (the `RateLimit-Limit` header).
    pub limit: u64,
    /// Whole seconds until a retry can succeed (at least 1).
    pub retry_after_secs: u64,
}

type Bucket<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// A token bucket of `rate` cells per second holding `burst_ms` worth of them (at least one).
fn bucket<C: Clock + Clone>(rate: u64, burst_ms: u64, clock: &C) -> (Bucket<C>, u32) {
    let rate = rate.max(1);
    let period = Duration::from_nanos((1_000_000_000 / rate).max(1));
    let burst = u32::try_from(rate.saturating_mul(burst_ms) / 1000)
        .unwrap_or(u32::MAX)
        .max(1);
    let quota = Quota::with_period(period)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
    (RateLimiter::direct_with_clock(quota, clock.clone()), burst)
}

fn retry_secs(wait: Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

/// One topic's buckets, built from the topic's [`RateLimit`] and rebuilt when it changes.
struct TopicBuckets<C: Clock> {
    uid: u64,
    limit: RateLimit,
    messages: Option<(Bucket<C>, u32)>,
    bytes: Option<(Bucket<C>, u32)>,
}

/// Per-topic produce limits.
pub struct TopicRateLimits<C: Clock + Clone = DefaultClock> {
    burst_ms: u64,
    clock: C,
    /// Buckets by topic. Changed by single inserts and clears of buckets built beforehand,
    /// so a panicked holder leaves the map whole ([`broker_core::sync`]).
    topics: Mutex<HashMap<String, Arc<TopicBuckets<C>>>>,
}

impl<C: Clock + Clone> std::fmt::Debug for TopicRateLimits<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicRateLimits")
            .field("burst_ms", &self.burst_ms)
            .finish_non_exhaustive()
    }
}

impl TopicRateLimits<DefaultClock> {
    /// Limits on the real clock.
    pub fn new(burst_ms: u64) -> Self {
        TopicRateLimits::with_clock(burst_ms, DefaultClock::default())
    }
}

impl<C: Clock + Clone> TopicRateLimits<C> {
    /// Limits on `clock` (a fake one in tests).
    pub fn with_clock(burst_ms: u64, clock: C) -> Self {
        TopicRateLimits {
            burst_ms,
            clock,
            topics: Mutex::new(HashMap::new()),
        }
    }

    fn buckets(&self, topic: &str, uid: u64, limit: RateLimit) -> Arc<TopicBuckets<C>> {
        let mut topics = lock(&self.topics);
        if let Some(found) = topics.get(topic)
            && found.uid == uid
            && found.limit == limit
        {
            return Arc::clone(found);
        }
        if topics.len() >= MAX_LIMITER_KEYS {
            topics.clear();
        }
        let built = Arc::new(TopicBuckets {
            uid,
            limit,
            messages: limit
                .messages_per_second
                .map(|rate| bucket(u64::from(rate), self.burst_ms, &self.clock)),
            bytes: limit
                .bytes_per_second
                .map(|rate| bucket(rate, self.burst_ms, &self.clock)),
        });
        topics.insert(topic.to_owned(), Arc::clone(&built));
        built
    }

    /// Admits a produce of `messages` messages and `bytes` value bytes to `topic` (whose
    /// incarnation is `uid`), or says when to retry. Messages are checked before bytes; a
    /// batch refused on bytes has still spent its message cells (the error is on the safe
    /// side: fewer admitted, never more).
    pub fn admit(
        &self,
        topic: &str,
        uid: u64,
        limit: RateLimit,
        messages: usize,
        bytes: usize,
    ) -> Result<(), RateLimited> {
        if limit == RateLimit::default() {
            return Ok(());
        }
        let buckets = self.buckets(topic, uid, limit);
        if let Some((bucket, burst)) = &buckets.messages {
            let rate = u64::from(limit.messages_per_second.unwrap_or(0));
            self.take(bucket, *burst, messages, rate, topic, "messages")?;
        }
        if let Some((bucket, burst)) = &buckets.bytes {
            let rate = limit.bytes_per_second.unwrap_or(0);
            self.take(bucket, *burst, bytes, rate, topic, "bytes")?;
        }
        Ok(())
    }

    fn take(
        &self,
        bucket: &Bucket<C>,
        burst: u32,
        cells: usize,
        rate: u64,
        topic: &str,
        unit: &str,
    ) -> Result<(), RateLimited> {
        let Some(cells) = NonZeroU32::new(u32::try_from(cells).unwrap_or(u32::MAX)) else {
            return Ok(());
        };
        match bucket.check_n(cells) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(RateLimited {
                detail: format!("topic '{topic}' is limited to {rate} {unit} per second"),
                limit: rate,
                retry_after_secs: retry_secs(not_until.wait_time_from(self.clock.now())),
            }),
            Err(_) => Err(RateLimited {
                detail: format!(
                    "this request's {cells} {unit} exceed topic '{topic}''s burst of {burst} {unit} ({rate} per second); send smaller batches"
                ),
                limit: rate,
                retry_after_secs: 1,
            }),
        }
    }
}

/// Per-principal request limits, keyed by principal (or peer address when anonymous).
#[derive(Debug)]
pub struct PrincipalRateLimits {
    rate: u32,
    limiter: Option<DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
    last_sweep_ms: AtomicU64,
    started: std::time::Instant,
}

/// The key shared by new principals once [`MAX_LIMITER_KEYS`] are tracked.
pub(crate) const OVERFLOW_KEY: &str = "\u{0}overflow";

impl PrincipalRateLimits {
    /// `rate` requests per second per principal (0: unlimited), holding `burst_ms` worth.
    pub fn new(rate: u32, burst_ms: u64) -> Self {
        let clock = DefaultClock::default();
        let limiter = (rate > 0).then(|| {
            let (_, burst) = bucket(u64::from(rate), burst_ms, &clock);
            let quota = Quota::with_period(Duration::from_nanos(
                (1_000_000_000 / u64::from(rate)).max(1),
            ))
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
            RateLimiter::dashmap_with_clock(quota, clock.clone())
        });
        PrincipalRateLimits {
            rate,
            limiter,
            clock,
            last_sweep_ms: AtomicU64::new(0),
            started: std::time::Instant::now(),
        }
    }

    /// Admits one request by the key `key` builds; it is built only when a limit is set, so
    /// an unlimited server formats no key per request.
    pub fn admit(&self, key: impl FnOnce() -> String) -> Result<(), RateLimited> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        self.sweep_if_due(limiter);
        let key = if limiter.len() >= MAX_LIMITER_KEYS {
            OVERFLOW_KEY.to_owned()
        } else {
            key()
        };
        limiter.check_key(&key).map_err(|not_until| RateLimited {
            detail: format!(
                "this client is limited to {} requests per second",
                self.rate
            ),
            limit: u64::from(self.rate),
            retry_after_secs: retry_secs(not_until.wait_time_from(self.clock.now())),
        })
    }

    fn sweep_if_due(&self, limiter: &DefaultKeyedRateLimiter<String>) {
        let now_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        let due =
            now_ms.saturating_sub(last) >= LIMITER_SWEEP_MS || limiter.len() >= MAX_LIMITER_KEYS;
        if due
            && self
                .last_sweep_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Principals tracked right now.
    pub fn tracked(&self) -> usize {
        self.limiter
            .as_ref()
            .map_or(0, DefaultKeyedRateLimiter::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    fn limit(messages: Option<u32>, bytes: Option<u64>) -> RateLimit {
        RateLimit {
            messages_per_second: messages,
            bytes_per_second: bytes,
        }
    }

    /// Offers batches of `batch` messages of `bytes_per_message` at `offered_per_second`
    /// messages per second for `seconds` of fake time; returns what was admitted.
    fn drive(
        limits: &TopicRateLimits<FakeRelativeClock>,
        clock: &FakeRelativeClock,
        limit: RateLimit,
        batch: usize,
        bytes_per_message: usize,
        offered_per_second: usize,
        seconds: u64,
    ) -> (usize, usize) {
        let (mut messages, mut bytes) = (0, 0);
        let batches = offered_per_second * seconds as usize / batch;
        let gap = Duration::from_secs(seconds) / u32::try_from(batches).expect("small");
        for _ in 0..batches {
            let size = batch * bytes_per_message;
            if limits.admit("t", 1, limit, batch, size).is_ok() {
                messages += batch;
                bytes += size;
            }
            clock.advance(gap);
        }
        (messages, bytes)
    }

    #[test]
    fn five_times_the_message_rate_is_admitted_within_ten_percent_batched_or_not() {
        for batch in [1, 10] {
            let clock = FakeRelativeClock::default();
            let limits = TopicRateLimits::with_clock(1000, clock.clone());
            let rate = limit(Some(100), None);
            let (admitted, _) = drive(&limits, &clock, rate, batch, 10, 500, 60);
            let expected = 100 * 60;
            assert!(
                admitted.abs_diff(expected) <= expected / 10,
                "batch {batch}: {admitted} vs {expected}"
            );
        }
    }

    #[test]
    fn five_times_the_byte_rate_is_admitted_within_ten_percent() {
        let clock = FakeRelativeClock::default();
        let limits = TopicRateLimits::with_clock(1000, clock.clone());
        let rate = limit(None, Some(10_000));
        let (_, admitted) = drive(&limits, &clock, rate, 5, 100, 500, 60);
        let expected = 10_000 * 60;
        assert!(
            admitted.abs_diff(expected) <= expected / 10,
            "{admitted} vs {expected}"
        );
    }

    #[test]
    fn a_burst_is_admitted_up_to_its_size_and_not_one_more() {
        let clock = FakeRelativeClock::default();
        let limits = TopicRateLimits::with_clock(1000, clock.clone());
        let rate = limit(Some(50), None);
        assert!(limits.admit("t", 1, rate, 49, 0).is_ok(), "limit - 1");
        assert!(limits.admit("t", 1, rate, 1, 0).is_ok(), "the limit");
        let refused = limits.admit("t", 1, rate, 1, 0).expect_err("limit + 1");
        assert!(refused.retry_after_secs >= 1);
        assert_eq!(refused.limit, 50);
        let too_big = limits.admit("t", 1, rate, 51, 0).expect_err("never fits");
        assert!(too_big.detail.contains("burst"), "{}", too_big.detail);
    }

    #[test]
    fn a_changed_limit_or_a_recreated_topic_gets_fresh_buckets() {
        let clock = FakeRelativeClock::default();
        let limits = TopicRateLimits::with_clock(1000, clock);
        let rate = limit(Some(1), None);
        assert!(limits.admit("t", 1, rate, 1, 0).is_ok());
        assert!(limits.admit("t", 1, rate, 1, 0).is_err());
        assert!(limits.admit("t", 2, rate, 1, 0).is_ok(), "new uid");
        assert!(limits.admit("t", 2, limit(Some(2), None), 1, 0).is_ok());
        assert!(limits.admit("t", 2, RateLimit::default(), 10, 0).is_ok());
    }

    #[test]
    fn principals_are_limited_separately() {
        let limits = PrincipalRateLimits::new(2, 1000);
        let key = |name: &'static str| move || name.to_owned();
        assert!(limits.admit(key("a")).is_ok());
        assert!(limits.admit(key("a")).is_ok());
        assert!(limits.admit(key("a")).is_err());
        assert!(limits.admit(key("b")).is_ok());
        assert_eq!(limits.tracked(), 2);
    }

    #[test]
    fn without_a_limit_every_request_is_admitted_and_no_key_is_built() {
        let unlimited = PrincipalRateLimits::new(0, 1000);
        for _ in 0..100 {
            let admitted = unlimited.admit(|| unreachable!("no key without a limit"));
            assert!(admitted.is_ok());
        }
        assert_eq!(unlimited.tracked(), 0);
    }
}
