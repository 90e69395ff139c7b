//! When a webhook post that failed is tried again: [`RetrySchedule`], exponential backoff with
//! jitter drawn from a caller's RNG, bounded by an attempt count and an age. The async sender
//! that posts (with [`WEBHOOK_TIMEOUT_MS`]) applies it; this file only decides.

use rand::Rng;

/// Most attempts at posting one event, the first included. With the delays below the last
/// retry comes about two minutes after the first attempt: long enough to ride out a receiver's
/// restart, short enough that a dead receiver does not hold events for long.
pub(crate) const MAX_DELIVERY_ATTEMPTS: u32 = 8;
/// The pause before the first retry, before jitter: a second, the time a receiver behind a
/// load balancer takes to fail over.
pub(crate) const FIRST_RETRY_DELAY_MS: u64 = 1_000;
/// The longest pause between two attempts, before jitter: a minute, so the pause never grows
/// past the time scale of the alerts themselves.
pub(crate) const MAX_RETRY_DELAY_MS: u64 = 60_000;
/// The oldest an event may be when it is posted, counted from the event: ten minutes. An
/// older event reports a state that later events have likely replaced (and `GET /v1/alerts`
/// shows the current one), so it is dropped rather than posted late.
pub(crate) const MAX_DELIVERY_AGE_MS: u64 = 10 * 60_000;
/// How long one post may take, connection included: five seconds. A receiver that hangs
/// costs the sender at most this per attempt, never the broker anything.
pub(crate) const WEBHOOK_TIMEOUT_MS: u64 = 5_000;

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextAttempt {
    /// Try again at this steady ms.
    RetryAt(u64),
    /// Drop the event.
    GiveUp(GiveUp),
}

/// Why an event is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// Every attempt was made.
    AttemptsSpent {
        /// Attempts made.
        attempts: u32,
    },
    /// The next attempt would come later than [`RetrySchedule::max_age_ms`] after the event.
    TooOld {
        /// The event's age at the would-be attempt, in ms.
        age_ms: u64,
    },
}

/// Exponential backoff with "equal jitter": after the `n`th failed attempt the base pause is
/// `first_delay_ms × 2^(n−1)`, capped at `max_delay_ms`, and the pause is drawn uniformly
/// from its upper half. The lower half keeps a floor, so a failing receiver is not hammered;
/// the random half spreads the retries of events that failed together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySchedule {
    /// The base pause after the first failure, ms.
    pub first_delay_ms: u64,
    /// The largest base pause, ms; at least `first_delay_ms`.
    pub max_delay_ms: u64,
    /// Most attempts, the first included; at least 1.
    pub max_attempts: u32,
    /// The oldest an event may be at an attempt, ms.
    pub max_age_ms: u64,
}

impl Default for RetrySchedule {
    /// The schedule of the constants above.
    fn default() -> Self {
        RetrySchedule {
            first_delay_ms: FIRST_RETRY_DELAY_MS,
            max_delay_ms: MAX_RETRY_DELAY_MS,
            max_attempts: MAX_DELIVERY_ATTEMPTS,
            max_age_ms: MAX_DELIVERY_AGE_MS,
        }
    }
}

impl RetrySchedule {
    /// The base pause after `failed` failed attempts (at least 1), before jitter.
    pub fn base_delay_ms(&self, failed: u32) -> u64 {
        debug_assert!(self.first_delay_ms <= self.max_delay_ms, "{self:?}");
        let growth = 2_u64.saturating_pow(failed.saturating_sub(1));
        self.first_delay_ms
            .saturating_mul(growth)
            .min(self.max_delay_ms)
    }

    /// After the `failed`th attempt at an event created at steady `created_ms` failed at
    /// `now_ms`: when to try again, or why not to.
    pub fn after_failure<R: Rng + ?Sized>(
        &self,
        failed: u32,
        created_ms: u64,
        now_ms: u64,
        rng: &mut R,
    ) -> NextAttempt {
        debug_assert!(self.max_attempts >= 1 && failed >= 1, "{self:?}, {failed}");
        if failed >= self.max_attempts {
            return NextAttempt::GiveUp(GiveUp::AttemptsSpent { attempts: failed });
        }
        let base = self.base_delay_ms(failed);
        let floor = base - base / 2;
        let at_ms = now_ms.saturating_add(floor + rng.gen_range(0..=base / 2));
        let age_ms = at_ms.saturating_sub(created_ms);
        if age_ms > self.max_age_ms {
            return NextAttempt::GiveUp(GiveUp::TooOld { age_ms });
        }
        NextAttempt::RetryAt(at_ms)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn base_delays_double_from_a_second_up_to_a_minute() {
        let schedule = RetrySchedule::default();
        let bases: Vec<u64> = (1..=9)
            .map(|failed| schedule.base_delay_ms(failed))
            .collect();
        assert_eq!(
            bases,
            [
                1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000
            ]
        );
        assert_eq!(
            schedule.base_delay_ms(u32::MAX),
            MAX_RETRY_DELAY_MS,
            "no overflow"
        );
    }

    #[test]
    fn the_last_attempt_is_the_max_and_then_the_event_is_dropped() {
        let schedule = RetrySchedule::default();
        let mut rng = StdRng::seed_from_u64(7);
        let last_retry = schedule.after_failure(MAX_DELIVERY_ATTEMPTS - 1, 0, 0, &mut rng);
        assert!(matches!(last_retry, NextAttempt::RetryAt(_)), "limit - 1");
        assert_eq!(
            schedule.after_failure(MAX_DELIVERY_ATTEMPTS, 0, 0, &mut rng),
            NextAttempt::GiveUp(GiveUp::AttemptsSpent {
                attempts: MAX_DELIVERY_ATTEMPTS
            })
        );
    }

    #[test]
    fn an_attempt_that_would_come_past_the_max_age_is_not_made() {
        let schedule = RetrySchedule {
            first_delay_ms: 1_000,
            max_delay_ms: 1_000,
            max_attempts: 100,
            max_age_ms: 10_000,
        };
        let mut rng = StdRng::seed_from_u64(1);
        assert!(matches!(
            schedule.after_failure(1, 0, 9_000, &mut rng),
            NextAttempt::RetryAt(at) if (9_500..=10_000).contains(&at)
        ));
        assert!(matches!(
            schedule.after_failure(1, 0, 10_000, &mut rng),
            NextAttempt::GiveUp(GiveUp::TooOld { age_ms }) if age_ms > 10_000
        ));
    }

    #[test]
    fn jitter_spreads_events_that_failed_together() {
        let schedule = RetrySchedule::default();
        let mut rng = StdRng::seed_from_u64(42);
        let mut retries: Vec<u64> = (0..50)
            .filter_map(|_| match schedule.after_failure(3, 0, 0, &mut rng) {
                NextAttempt::RetryAt(at) => Some(at),
                NextAttempt::GiveUp(_) => None,
            })
            .collect();
        retries.sort_unstable();
        retries.dedup();
        assert!(retries.len() > 40, "only {} distinct times", retries.len());
    }

    proptest! {
        #[test]
        fn a_retry_comes_in_the_upper_half_of_its_base_and_never_past_the_limits(
            seed in any::<u64>(),
            failed in 1_u32..12,
            created_ms in 0_u64..1_000_000,
            waited in 0_u64..1_000_000,
        ) {
            let schedule = RetrySchedule::default();
            let now_ms = created_ms + waited;
            let mut rng = StdRng::seed_from_u64(seed);
            let base = schedule.base_delay_ms(failed);
            match schedule.after_failure(failed, created_ms, now_ms, &mut rng) {
                NextAttempt::RetryAt(at) => {
                    prop_assert!(failed < MAX_DELIVERY_ATTEMPTS);
                    prop_assert!((now_ms + base.div_ceil(2)..=now_ms + base).contains(&at));
                    prop_assert!(at - created_ms <= MAX_DELIVERY_AGE_MS);
                }
                NextAttempt::GiveUp(GiveUp::AttemptsSpent { attempts }) => {
                    prop_assert_eq!(attempts, failed);
                    prop_assert!(failed >= MAX_DELIVERY_ATTEMPTS);
                }
                NextAttempt::GiveUp(GiveUp::TooOld { age_ms }) => {
                    prop_assert!(failed < MAX_DELIVERY_ATTEMPTS);
                    prop_assert!(age_ms > MAX_DELIVERY_AGE_MS);
                    prop_assert!(now_ms + base - created_ms > MAX_DELIVERY_AGE_MS);
                }
            }
        }
    }
}
