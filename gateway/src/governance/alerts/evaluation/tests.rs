use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::governance::alerts::rule::AlertRule;
use crate::governance::alerts::webhook_policy::WebhookPolicy;

fn rule(kind: AlertKind, threshold: f64, for_ms: u64) -> ValidRule {
    let subscription = !matches!(
        kind,
        AlertKind::ProduceErrors | AlertKind::Disk | AlertKind::Probe
    );
    let topic = !matches!(kind, AlertKind::Disk | AlertKind::Probe);
    AlertRule {
        name: "r".to_owned(),
        kind,
        topic: topic.then(|| "orders".to_owned()),
        subscription: subscription.then(|| "billing".to_owned()),
        threshold: kind.has_threshold().then_some(threshold),
        for_ms,
        webhook_url: "http://127.0.0.1:9/hook".to_owned(),
        secret: None,
    }
    .validate(&WebhookPolicy::allow_any())
    .expect("a valid rule")
}

fn backlog(threshold: f64, for_ms: u64) -> RuleEvaluator {
    RuleEvaluator::new(rule(AlertKind::Backlog, threshold, for_ms))
}

fn offline(for_ms: u64) -> RuleEvaluator {
    RuleEvaluator::new(rule(AlertKind::ConsumerOffline, 0.0, for_ms))
}

fn value(evaluator: &mut RuleEvaluator, now_ms: u64, value: f64) -> Option<AlertEvent> {
    evaluator
        .observe(now_ms, Sample::Value(value))
        .expect("a valid sample")
}

fn consumers(
    evaluator: &mut RuleEvaluator,
    now_ms: u64,
    backlog: u64,
    last_activity_ms: Option<u64>,
) -> Option<AlertEvent> {
    let sample = Sample::Consumers {
        backlog,
        last_activity_ms,
    };
    evaluator.observe(now_ms, sample).expect("a valid sample")
}

fn firing(value: f64, since_ms: u64, at_ms: u64) -> Option<AlertEvent> {
    Some(AlertEvent::Firing {
        rule: "r".to_owned(),
        value,
        since_ms,
        at_ms,
    })
}

fn resolved(value: f64, since_ms: u64, fired_at_ms: u64, at_ms: u64) -> Option<AlertEvent> {
    Some(AlertEvent::Resolved {
        rule: "r".to_owned(),
        value,
        since_ms,
        fired_at_ms,
        at_ms,
    })
}

#[test]
fn a_backlog_above_its_threshold_fires_after_for_ms_and_resolves_once_when_it_drops() {
    let mut rule = backlog(100.0, 10_000);
    assert_eq!(value(&mut rule, 1_000, 150.0), None);
    assert_eq!(rule.state(), RuleState::Pending { since_ms: 1_000 });
    assert_eq!(value(&mut rule, 10_999, 150.0), None, "for_ms - 1");
    assert_eq!(
        value(&mut rule, 11_000, 160.0),
        firing(160.0, 1_000, 11_000)
    );
    assert_eq!(value(&mut rule, 12_000, 170.0), None, "fires once");
    assert_eq!(
        value(&mut rule, 13_000, 20.0),
        resolved(20.0, 1_000, 11_000, 13_000)
    );
    assert_eq!(value(&mut rule, 14_000, 20.0), None, "resolves once");
    assert_eq!(rule.state(), RuleState::Ok);
}

#[test]
fn a_value_equal_to_the_threshold_does_not_breach_and_one_above_does() {
    let mut rule = backlog(100.0, 0);
    assert_eq!(value(&mut rule, 1, 100.0), None);
    assert_eq!(rule.state(), RuleState::Ok);
    assert_eq!(
        value(&mut rule, 2, 101.0),
        firing(101.0, 2, 2),
        "for_ms 0 fires at once"
    );
}

#[test]
fn a_dip_below_the_threshold_restarts_the_pending_time() {
    let mut rule = backlog(10.0, 5_000);
    value(&mut rule, 0, 11.0);
    value(&mut rule, 4_000, 9.0);
    assert_eq!(rule.state(), RuleState::Ok);
    assert_eq!(value(&mut rule, 6_000, 11.0), None);
    assert_eq!(value(&mut rule, 10_999, 11.0), None);
    assert_eq!(value(&mut rule, 11_000, 11.0), firing(11.0, 6_000, 11_000));
}

#[test]
fn a_gap_restarts_a_pending_rule_but_keeps_a_firing_one() {
    let mut rule = backlog(10.0, 20_000);
    value(&mut rule, 0, 11.0);
    let late = MAX_SAMPLE_GAP_MS + 1;
    assert_eq!(
        value(&mut rule, late, 11.0),
        None,
        "not assumed to hold across the gap"
    );
    assert_eq!(rule.state(), RuleState::Pending { since_ms: late });
    let fire_at = late + 20_000;
    assert_eq!(value(&mut rule, fire_at, 12.0), firing(12.0, late, fire_at));
    let after_gap = fire_at + MAX_SAMPLE_GAP_MS + 1;
    assert_eq!(value(&mut rule, after_gap, 12.0), None, "no second firing");
    assert_eq!(
        value(&mut rule, after_gap + 1, 1.0),
        resolved(1.0, late, fire_at, after_gap + 1)
    );
    let mut exact = backlog(10.0, MAX_SAMPLE_GAP_MS);
    value(&mut exact, 0, 11.0);
    assert_eq!(
        value(&mut exact, MAX_SAMPLE_GAP_MS, 11.0),
        firing(11.0, 0, MAX_SAMPLE_GAP_MS),
        "a pause of exactly the limit is no gap"
    );
}

#[test]
fn consumer_offline_fires_after_for_ms_of_backlog_without_activity_and_resolves_on_return() {
    let mut rule = offline(10_000);
    assert_eq!(consumers(&mut rule, 1_000, 5, Some(500)), None);
    assert_eq!(rule.state(), RuleState::Pending { since_ms: 1_000 });
    assert_eq!(consumers(&mut rule, 10_999, 7, Some(500)), None);
    assert_eq!(
        consumers(&mut rule, 11_000, 7, Some(500)),
        firing(7.0, 1_000, 11_000)
    );
    assert_eq!(consumers(&mut rule, 20_000, 9, Some(500)), None);
    assert_eq!(
        consumers(&mut rule, 21_000, 4, Some(20_500)),
        resolved(4.0, 1_000, 11_000, 21_000),
        "a consumer came back"
    );
    assert_eq!(rule.state(), RuleState::Pending { since_ms: 20_500 });
    assert_eq!(
        consumers(&mut rule, 30_500, 4, Some(20_500)),
        firing(4.0, 20_500, 30_500)
    );
    assert_eq!(
        consumers(&mut rule, 31_000, 0, Some(20_500)),
        resolved(0.0, 20_500, 30_500, 31_000)
    );
}

#[test]
fn consumer_offline_stays_ok_while_consumers_keep_receiving_and_without_backlog() {
    let mut rule = offline(5_000);
    for step in 0..100 {
        let now = step * 1_000;
        assert_eq!(
            consumers(&mut rule, now, 10, Some(now.saturating_sub(300))),
            None
        );
    }
    let mut idle = offline(5_000);
    for step in 0..100 {
        assert_eq!(consumers(&mut idle, step * 1_000, 0, None), None);
    }
    assert_eq!(idle.state(), RuleState::Ok);
}

#[test]
fn a_message_to_a_long_idle_subscription_gets_for_ms_before_consumer_offline_fires() {
    let mut rule = offline(5_000);
    consumers(&mut rule, 100_000, 0, Some(1_000));
    assert_eq!(consumers(&mut rule, 101_000, 1, Some(1_000)), None);
    assert_eq!(consumers(&mut rule, 105_999, 1, Some(1_000)), None);
    assert_eq!(
        consumers(&mut rule, 106_000, 1, Some(1_000)),
        firing(1.0, 101_000, 106_000)
    );
}

#[test]
fn a_consumer_never_seen_counts_as_offline_from_the_first_backlog() {
    let mut rule = offline(5_000);
    assert_eq!(consumers(&mut rule, 2_000, 3, None), None);
    assert_eq!(
        consumers(&mut rule, 7_000, 3, None),
        firing(3.0, 2_000, 7_000)
    );
}

#[test]
fn a_changed_rule_resolves_its_firing_alert_and_starts_over_while_an_equal_one_changes_nothing() {
    let mut evaluator = backlog(10.0, 0);
    value(&mut evaluator, 1_000, 50.0);
    assert_eq!(
        evaluator.replace_rule(rule(AlertKind::Backlog, 10.0, 0), 2_000),
        None
    );
    assert!(matches!(evaluator.state(), RuleState::Firing { .. }));
    let event = evaluator.replace_rule(rule(AlertKind::Backlog, 20.0, 0), 2_000);
    assert_eq!(event, resolved(50.0, 1_000, 1_000, 2_000));
    assert_eq!(evaluator.state(), RuleState::Ok);
    assert_eq!(evaluator.rule().threshold(), 20.0);
    assert_eq!(
        value(&mut evaluator, 1_500, 50.0),
        firing(50.0, 1_500, 1_500),
        "no history"
    );
    let pending = backlog(10.0, 60_000);
    assert_eq!(pending.retire(0), None);
}

#[test]
fn a_retired_rule_resolves_its_firing_alert() {
    let mut evaluator = backlog(10.0, 0);
    value(&mut evaluator, 1_000, 50.0);
    value(&mut evaluator, 2_000, 40.0);
    assert_eq!(evaluator.retire(3_000), resolved(40.0, 1_000, 1_000, 3_000));
}

#[test]
fn wrong_shape_non_finite_and_out_of_order_samples_are_refused_and_change_nothing() {
    let mut evaluator = backlog(10.0, 60_000);
    value(&mut evaluator, 5_000, 50.0);
    let before = evaluator.state();
    let shape = Sample::Consumers {
        backlog: 1,
        last_activity_ms: None,
    };
    assert_eq!(
        evaluator.observe(6_000, shape),
        Err(AlertError::SampleKindMismatch {
            kind: AlertKind::Backlog
        })
    );
    assert!(matches!(
        evaluator.observe(6_000, Sample::Value(f64::NAN)),
        Err(AlertError::SampleNotFinite { .. })
    ));
    assert_eq!(
        evaluator.observe(4_999, Sample::Value(50.0)),
        Err(AlertError::SampleOutOfOrder {
            previous_ms: 5_000,
            now_ms: 4_999
        })
    );
    assert_eq!(evaluator.state(), before);
    let mut offline = offline(5_000);
    assert!(offline.observe(0, Sample::Value(1.0)).is_err());
}

/// The events a threshold rule should emit, from the definition: a sample breaches when its
/// value is above the threshold; a run of breaching samples starts at the first one after a
/// sample that did not breach or after a gap; the rule is firing at a sample that breaches
/// when it was firing before or its run has lasted `for_ms`.
fn model(threshold: f64, for_ms: u64, samples: &[(u64, f64)]) -> Vec<Option<AlertEvent>> {
    let mut events = Vec::new();
    let (mut was_firing, mut run_start, mut fired) = (false, 0, (0, 0));
    let mut previous: Option<(u64, bool)> = None;
    for &(now, value) in samples {
        let breach = value > threshold;
        let gap = previous.is_some_and(|(at, _)| now - at > MAX_SAMPLE_GAP_MS);
        let run_continues = previous.is_some_and(|(_, breached)| breached) && !gap;
        if breach && !run_continues {
            run_start = now;
        }
        let firing_now = breach && (was_firing || now - run_start >= for_ms);
        events.push(match (was_firing, firing_now) {
            (false, true) => {
                fired = (run_start, now);
                firing(value, run_start, now)
            }
            (true, false) => resolved(value, fired.0, fired.1, now),
            _ => None,
        });
        was_firing = firing_now;
        previous = Some((now, breach));
    }
    events
}

fn pause() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..4_000_u64,
        1 => Just(MAX_SAMPLE_GAP_MS),
        1 => Just(MAX_SAMPLE_GAP_MS + 1),
        1 => 0..3 * MAX_SAMPLE_GAP_MS,
    ]
}

/// Sample times from pauses, starting at `start`.
fn times(start: u64, pauses: &[u64]) -> Vec<u64> {
    pauses
        .iter()
        .scan(start, |now, pause| {
            *now += pause;
            Some(*now)
        })
        .collect()
}

fn check_alternation(events: &[AlertEvent]) -> Result<(), TestCaseError> {
    let mut open: Option<(u64, u64)> = None;
    for event in events {
        match (event, open) {
            (
                AlertEvent::Firing {
                    since_ms, at_ms, ..
                },
                None,
            ) => open = Some((*since_ms, *at_ms)),
            (
                AlertEvent::Resolved {
                    since_ms,
                    fired_at_ms,
                    ..
                },
                Some(fired),
            ) => {
                prop_assert_eq!((*since_ms, *fired_at_ms), fired);
                open = None;
            }
            (event, open) => {
                return Err(TestCaseError::fail(format!("{event:?} after {open:?}")));
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn threshold_rules_emit_exactly_the_events_of_the_model(
        for_ms in prop_oneof![Just(0_u64), Just(1), Just(5_000), Just(12_345), Just(40_000)],
        steps in vec((pause(), 0_u8..5), 1..80),
    ) {
        let threshold = 2.0;
        let pauses: Vec<u64> = steps.iter().map(|(pause, _)| *pause).collect();
        let samples: Vec<(u64, f64)> = times(1_000, &pauses)
            .into_iter()
            .zip(steps.iter().map(|(_, value)| f64::from(*value)))
            .collect();
        let mut evaluator = backlog(threshold, for_ms);
        let got: Vec<Option<AlertEvent>> = samples
            .iter()
            .map(|&(now, value)| evaluator.observe(now, Sample::Value(value)))
            .collect::<Result<_, _>>()?;
        prop_assert_eq!(&got, &model(threshold, for_ms, &samples));
        let events: Vec<AlertEvent> = got.into_iter().flatten().collect();
        check_alternation(&events)?;
    }

    #[test]
    fn consumer_offline_fires_when_and_only_while_backlog_waits_for_ms_without_activity(
        for_ms in prop_oneof![Just(MIN_FOR_OFFLINE), Just(12_345_u64), Just(40_000)],
        steps in vec((pause(), 0_u64..3, any::<bool>(), any::<u16>()), 1..80),
    ) {
        let pauses: Vec<u64> = steps.iter().map(|step| step.0 + 1).collect();
        let times = times(1_000, &pauses);
        let mut evaluator = offline(for_ms);
        let mut last_activity: Option<u64> = None;
        let mut seen: Vec<(u64, u64)> = Vec::new();
        let mut events = Vec::new();
        for (i, (&now, &(_, backlog, active, lag))) in times.iter().zip(&steps).enumerate() {
            if active {
                // A receive since the previous sample, reported at this one.
                let earliest = if i == 0 { 0 } else { times[i - 1] + 1 };
                last_activity = Some(now.saturating_sub(u64::from(lag)).max(earliest));
            }
            seen.push((now, backlog));
            let event = consumers(&mut evaluator, now, backlog, last_activity);
            let quiet_since = |start: usize| {
                seen[start..].iter().all(|&(_, backlog)| backlog > 0)
                    && seen[start..].windows(2).all(|w| w[1].0 - w[0].0 <= MAX_SAMPLE_GAP_MS)
                    && last_activity.is_none_or(|at| at <= seen[start].0)
            };
            if let Some(AlertEvent::Firing { since_ms, .. }) = &event {
                let start = seen.iter().position(|&(at, _)| at >= *since_ms).unwrap_or(i);
                prop_assert!(
                    now - since_ms >= for_ms && quiet_since(start),
                    "fired at {now} since {since_ms}: {seen:?}, activity {last_activity:?}"
                );
                prop_assert!(last_activity.is_none_or(|at| at <= *since_ms));
            }
            if let RuleState::Firing { since_ms, .. } = evaluator.state() {
                prop_assert!(
                    backlog > 0 && last_activity.is_none_or(|at| at <= since_ms),
                    "firing at {now} since {since_ms} with backlog {backlog}, activity {last_activity:?}"
                );
            } else {
                let due = (0..seen.len())
                    .find(|&start| now - seen[start].0 >= for_ms && quiet_since(start));
                prop_assert!(
                    due.is_none(),
                    "not firing at {now} though quiet since sample {due:?}: {seen:?}"
                );
            }
            events.extend(event);
        }
        check_alternation(&events)?;
    }
}

const MIN_FOR_OFFLINE: u64 = crate::governance::alerts::rule::MIN_CONSUMER_OFFLINE_FOR_MS;

#[test]
fn a_probe_rule_fires_once_failures_have_lasted_for_ms_and_resolves_on_a_success() {
    let mut probe = RuleEvaluator::new(rule(AlertKind::Probe, 0.0, 1_000));
    assert_eq!(value(&mut probe, 0, 0.0), None);
    assert_eq!(value(&mut probe, 100, 1.0), None);
    assert_eq!(probe.state(), RuleState::Pending { since_ms: 100 });
    assert_eq!(value(&mut probe, 600, 2.0), None);
    assert_eq!(value(&mut probe, 1_100, 3.0), firing(3.0, 100, 1_100));
    assert_eq!(value(&mut probe, 1_200, 4.0), None, "fires once");
    let resolved = value(&mut probe, 1_300, 0.0);
    assert!(
        matches!(resolved, Some(AlertEvent::Resolved { value, fired_at_ms: 1_100, .. }) if value == 0.0),
        "{resolved:?}"
    );
    let consumers = Sample::Consumers {
        backlog: 1,
        last_activity_ms: None,
    };
    assert!(probe.observe(1_400, consumers).is_err(), "wrong shape");
    assert!(probe.observe(1_400, Sample::Value(f64::NAN)).is_err());
}
