//! Automatic preferred-leader election's policy.

use std::time::{Duration, Instant};

use super::fixtures::{accept, cluster, nodes, topic_config};
use crate::cluster::lead_back::{CAUGHT_UP_ENTRIES, HandBack, LeadBack, Led};
use crate::cluster::{ClusterState, Command, PartitionPlacement, TopicRecord};

const ALL_LIVE: fn(u64) -> bool = |_| true;

/// Four Active nodes (one may drain) and topic `t` of one partition placed on `replicas`.
fn state(replicas: &[u64]) -> ClusterState {
    let mut state = cluster(&nodes(4, 1));
    let topic = TopicRecord {
        config: topic_config("t", 1, 3),
        placement: vec![PartitionPlacement {
            replicas: replicas.to_vec(),
        }],
    };
    accept(&mut state, Command::CreateTopic(topic));
    state
}

fn led(lag: &[(u64, u64)]) -> Vec<Led> {
    vec![Led {
        topic: "t".into(),
        partition: 0,
        lag: lag.iter().copied().collect(),
    }]
}

#[test]
fn a_partition_goes_back_once_its_preferred_leader_was_fit_for_the_whole_wait() {
    let state = state(&[2, 1, 3]);
    let mut policy = LeadBack::new(Duration::from_secs(10));
    let t0 = Instant::now();
    let lags = led(&[(2, 0), (3, 0)]);
    assert!(policy.due(&state, 1, &lags, ALL_LIVE, t0).is_empty());
    let at = |s| t0 + Duration::from_secs(s);
    assert!(policy.due(&state, 1, &lags, ALL_LIVE, at(9)).is_empty());
    let due = policy.due(&state, 1, &lags, ALL_LIVE, at(10));
    assert_eq!(
        due,
        vec![HandBack {
            topic: "t".into(),
            partition: 0,
            to: 2
        }]
    );
    // Returned once: the next is due only after another whole wait.
    assert!(policy.due(&state, 1, &lags, ALL_LIVE, at(11)).is_empty());
    assert_eq!(policy.due(&state, 1, &lags, ALL_LIVE, at(21)).len(), 1);
}

#[test]
fn a_preferred_leader_unfit_at_one_look_starts_the_wait_over() {
    let state = state(&[2, 1, 3]);
    let mut policy = LeadBack::new(Duration::from_secs(10));
    let t0 = Instant::now();
    let at = |s| t0 + Duration::from_secs(s);
    let fit = led(&[(2, CAUGHT_UP_ENTRIES)]);
    let behind = led(&[(2, CAUGHT_UP_ENTRIES + 1)]);
    assert!(policy.due(&state, 1, &fit, ALL_LIVE, t0).is_empty());
    assert!(policy.due(&state, 1, &behind, ALL_LIVE, at(5)).is_empty());
    assert!(policy.due(&state, 1, &fit, ALL_LIVE, at(6)).is_empty());
    assert!(policy.due(&state, 1, &fit, ALL_LIVE, at(15)).is_empty());
    assert_eq!(policy.due(&state, 1, &fit, ALL_LIVE, at(16)).len(), 1);
    // Not heard from lately: unfit, however caught up it looks.
    let mut policy = LeadBack::new(Duration::ZERO);
    assert!(policy.due(&state, 1, &fit, |n| n != 2, t0).is_empty());
    assert_eq!(policy.due(&state, 1, &fit, ALL_LIVE, t0).len(), 1);
}

#[test]
fn no_move_to_a_draining_unknown_or_unheard_preferred_leader_nor_from_itself() {
    let mut policy = LeadBack::new(Duration::ZERO);
    let now = Instant::now();
    // The preferred leader leads already.
    assert!(
        policy
            .due(&state(&[1, 2, 3]), 1, &led(&[(2, 0)]), ALL_LIVE, now)
            .is_empty()
    );
    // Its lag is unknown (never heard from).
    assert!(
        policy
            .due(&state(&[2, 1, 3]), 1, &led(&[(3, 0)]), ALL_LIVE, now)
            .is_empty()
    );
    // Draining.
    let mut draining = state(&[2, 1, 3]);
    accept(&mut draining, Command::DrainNode { id: 2 });
    assert!(
        policy
            .due(&draining, 1, &led(&[(2, 0)]), ALL_LIVE, now)
            .is_empty()
    );
    // An internal topic is its keeper's.
    let internal = vec![Led {
        topic: "__wharf.probe.2".into(),
        partition: 0,
        lag: [(2, 0)].into(),
    }];
    assert!(
        policy
            .due(&state(&[2, 1, 3]), 1, &internal, ALL_LIVE, now)
            .is_empty()
    );
}
