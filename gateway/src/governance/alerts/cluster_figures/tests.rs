use broker_core::broker::SubscriptionFigures;
use broker_core::subscription::SubscriptionSpec;

use super::*;
use crate::fanout::subscription_figures::LedSubscription;

fn backlog(n: u64) -> SubscriptionStats {
    SubscriptionStats {
        backlog: n,
        ..SubscriptionStats::default()
    }
}

/// This node's figures of topic `t`, subscription `s` (uid 7), serving partition 0 only.
fn here() -> TopicFigures {
    let spec = SubscriptionSpec {
        name: "s".into(),
        ..SubscriptionSpec::default()
    };
    TopicFigures {
        served: vec![true, false, false],
        delayed: vec![0; 3],
        subscriptions: vec![SubscriptionFigures {
            config: spec.into_config("t", 0, 7).expect("a valid spec"),
            partitions: vec![backlog(1), backlog(100), backlog(100)],
        }],
    }
}

fn answer(partitions: &[(u32, u64)], quiet: Option<u64>) -> TopicAnswer {
    TopicAnswer {
        topic: "t".into(),
        led: LedFigures {
            delayed: partitions.iter().map(|(p, _)| (*p, 0)).collect(),
            subscriptions: vec![LedSubscription {
                name: "s".into(),
                uid: 7,
                partitions: partitions.iter().map(|(p, n)| (*p, backlog(*n))).collect(),
            }],
        },
        quiet_ms: quiet.map(|q| ("s".to_owned(), q)).into_iter().collect(),
    }
}

#[test]
fn each_partition_is_counted_once_from_its_leader_and_the_latest_receive_wins() {
    let first = answer(&[(1, 10)], Some(9_000));
    // A deposed leader still claims partition 1 (and a partition this node serves): only
    // partition 2 is taken from it.
    let second = answer(&[(0, 50), (1, 50), (2, 20)], Some(300));
    let merged = merge_topic(here(), &[&first, &second]);
    assert_eq!(merged.stats["s"].backlog, 1 + 10 + 20);
    assert_eq!(
        merged.quiet_ms["s"], 300,
        "the most recent receive of any node"
    );
}

#[test]
fn a_partition_no_leader_answered_for_keeps_this_nodes_copy() {
    let merged = merge_topic(here(), &[&answer(&[(1, 10)], None)]);
    assert_eq!(merged.stats["s"].backlog, 1 + 10 + 100);
    assert!(merged.quiet_ms.is_empty(), "no node saw a receive");
}

#[test]
fn the_merged_view_answers_in_this_nodes_clock_and_sums_and_maxes_node_figures() {
    let mut figures = ClusterFigures {
        at_ms: 50_000,
        ..ClusterFigures::default()
    };
    figures.topics.insert(
        "t".into(),
        merge_topic(here(), &[&answer(&[], Some(2_000))]),
    );
    figures.produce_errors.insert(None, 5);
    figures.disk_share = Some(0.7);
    assert_eq!(
        figures.last_receive_ms("t", "s").expect("known"),
        Some(48_000)
    );
    assert_eq!(figures.subscription("t", "s").expect("known").backlog, 201);
    assert_eq!(figures.subscriptions("t").expect("known").len(), 1);
    assert!(matches!(
        figures.subscription("t", "x"),
        Err(BrokerError::SubscriptionNotFound { .. })
    ));
    assert!(matches!(
        figures.subscription("u", "s"),
        Err(BrokerError::TopicNotFound { .. })
    ));
    assert_eq!(figures.produce_errors(None), 5);
    assert_eq!(figures.produce_errors(Some("t")), 0);
    assert_eq!(figures.disk_share(), Some(0.7));
}

#[test]
fn the_probe_is_the_worst_node_and_failing_since_the_earliest_failure() {
    let mut figures = ClusterFigures {
        at_ms: 50_000,
        ..ClusterFigures::default()
    };
    assert_eq!(figures.probe_failures(), None, "no node finished a round");
    assert_eq!(figures.probe_failing(), None);
    let healthy = ProbeFigures {
        failures: 0,
        failing_for_ms: None,
    };
    figures.probes.insert(1, healthy);
    assert_eq!(figures.probe_failures(), Some(0));
    assert_eq!(figures.probe_failing(), None, "every node succeeds");
    figures.probes.insert(
        2,
        ProbeFigures {
            failures: 3,
            failing_for_ms: Some(4_000),
        },
    );
    figures.probes.insert(
        3,
        ProbeFigures {
            failures: 1,
            failing_for_ms: Some(9_000),
        },
    );
    assert_eq!(figures.probe_failures(), Some(3));
    assert_eq!(figures.probe_failing(), Some((41_000, vec![2, 3])));
}

#[test]
fn a_node_of_an_earlier_version_answers_without_a_probe() {
    let answer: NodeFigures =
        serde_json::from_str(r#"{"topics":[],"produce_errors":[],"disk_share":null}"#)
            .expect("an answer without a probe still reads");
    assert_eq!(answer.probe, None);
}

#[test]
fn a_node_that_leaves_asks_unanswered_counts_as_failing_from_its_first_silence() {
    let mut silent = SilentNodes::default();
    assert!(silent.observe(&[], 1_000).is_empty());
    let first = silent.observe(&[3], 2_000);
    assert_eq!(
        first[&3],
        ProbeFigures {
            failures: 1,
            failing_for_ms: Some(0)
        }
    );
    silent.observe(&[3, 2], 3_000);
    let later = silent.observe(&[3, 2], 4_000);
    assert_eq!(
        later[&3],
        ProbeFigures {
            failures: 3,
            failing_for_ms: Some(2_000)
        }
    );
    assert_eq!(later[&2].failures, 2);
    // Node 3 answers again: its run ends; a later silence starts a new one.
    let back = silent.observe(&[2], 5_000);
    assert!(!back.contains_key(&3));
    let again = silent.observe(&[3], 6_000);
    assert_eq!(again[&3].failures, 1);
    assert!(!again.contains_key(&2));
}
