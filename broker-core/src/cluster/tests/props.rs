//! Property tests: placement invariants over random clusters, and random command sequences
//! that keep the state valid and leave it byte-identical when refused.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::fixtures::{node, subscription, topic_config};
use super::placement::{counts, spread, zones_of};
use crate::cluster::{
    ClusterState, Command, NodeRecord, NodeState, PartitionPlacement, PlacementLoad, TopicRecord,
    place, plan_drain,
};

/// Up to 9 nodes, each in one of up to 4 zones, some draining (at least one Active).
fn cluster_nodes() -> impl Strategy<Value = Vec<NodeRecord>> {
    (1u64..=9, 1u64..=4).prop_flat_map(|(count, zones)| {
        proptest::collection::vec((0..zones, proptest::bool::weighted(0.2)), count as usize)
            .prop_map(|specs| {
                (1u64..)
                    .zip(specs)
                    .map(|(id, (zone, draining))| NodeRecord {
                        state: if draining && id > 1 {
                            NodeState::Draining
                        } else {
                            NodeState::Active
                        },
                        ..node(id, &format!("z{zone}"))
                    })
                    .collect()
            })
    })
}

fn active_zones(members: &[NodeRecord]) -> BTreeMap<&str, usize> {
    let mut zones = BTreeMap::new();
    for member in members.iter().filter(|n| n.is_active()) {
        *zones.entry(member.zone.as_str()).or_insert(0) += 1;
    }
    zones
}

fn check_partition(
    members: &[NodeRecord],
    placement: &PartitionPlacement,
    rf: u32,
) -> Result<(), TestCaseError> {
    let distinct: BTreeSet<_> = placement.replicas.iter().collect();
    prop_assert_eq!(distinct.len(), rf as usize);
    prop_assert_eq!(placement.replicas.len(), rf as usize);
    for replica in &placement.replicas {
        let record = members.iter().find(|n| n.id == *replica);
        prop_assert!(record.is_some_and(NodeRecord::is_active), "{:?}", replica);
    }
    let zones = active_zones(members).len();
    prop_assert_eq!(zones_of(members, placement).len(), zones.min(rf as usize));
    Ok(())
}

proptest! {
    #[test]
    fn one_topic_on_an_empty_cluster_is_spread_and_balanced(
        members in cluster_nodes(),
        partitions in 1u32..=24,
        rf_seed in 0u32..9,
    ) {
        let active: Vec<NodeRecord> = members.iter().filter(|n| n.is_active()).cloned().collect();
        let rf = rf_seed % active.len() as u32 + 1;
        let placement = place(&members, &PlacementLoad::default(), partitions, rf)
            .expect("rf within the active nodes");
        prop_assert_eq!(placement.len(), partitions as usize);
        for p in &placement {
            check_partition(&members, p, rf)?;
        }
        let (replicas, _) = counts(&active, &placement);
        for zone in active_zones(&members).keys() {
            let within = active.iter().filter(|n| n.zone == *zone).map(|n| &replicas[&n.id]);
            prop_assert!(spread(within) <= 1, "zone {}: {:?}", zone, replicas);
        }
        let sizes: BTreeSet<usize> = active_zones(&members).values().copied().collect();
        if sizes.len() == 1 {
            prop_assert!(spread(replicas.values()) <= 1, "{:?}", replicas);
        }
        prop_assert_eq!(place(&members, &PlacementLoad::default(), partitions, rf), Ok(placement));
    }

    #[test]
    fn topics_placed_one_after_another_keep_the_invariants(
        members in cluster_nodes(),
        topics in proptest::collection::vec((1u32..=12, 0u32..9), 1..5),
    ) {
        let mut state = ClusterState::new();
        for member in &members {
            let mut joining = member.clone();
            joining.state = NodeState::Active;
            state.apply(&Command::UpsertNode(joining)).expect("joins");
        }
        for member in members.iter().filter(|n| !n.is_active()) {
            state.apply(&Command::DrainNode { id: member.id }).expect("no topics yet");
        }
        let active = state.active_count() as u32;
        for (index, (partitions, rf_seed)) in topics.into_iter().enumerate() {
            let rf = rf_seed % active + 1;
            let load = PlacementLoad::of(&state);
            let placement = place(&members, &load, partitions, rf).expect("placeable");
            for p in &placement {
                check_partition(&members, p, rf)?;
            }
            let record = TopicRecord {
                config: topic_config(&format!("t{index}"), partitions, rf),
                placement,
            };
            state.apply(&Command::CreateTopic(record)).expect("a placed topic is accepted");
            prop_assert_eq!(state.validate(), Ok(()));
        }
    }
}

/// What the random sequence does; turned into a command against the state of the moment.
#[derive(Debug, Clone)]
enum Step {
    Join {
        id: u64,
        zone: u8,
        addr: u8,
        draining: bool,
    },
    Drain {
        id: u64,
    },
    Remove {
        id: u64,
    },
    CreatePlaced {
        topic: u8,
        partitions: u32,
        rf: u32,
    },
    CreateRaw {
        topic: u8,
        replicas: Vec<Vec<u64>>,
    },
    UpdateTopic {
        topic: u8,
        retention: bool,
        change_fixed: u8,
    },
    DeleteTopic {
        topic: u8,
    },
    Subscribe {
        topic: u8,
        name: u8,
    },
    UpdateSubscription {
        topic: u8,
        name: u8,
        new_uid: bool,
    },
    Unsubscribe {
        topic: u8,
        name: u8,
    },
    SetPlacement {
        topic: u8,
        partition: u32,
        replicas: Vec<u64>,
    },
    DrainPlan {
        id: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let id = 1u64..=7;
    let replicas = proptest::collection::vec(1u64..=8, 0..4);
    prop_oneof![
        3 => (id.clone(), 0u8..3, 0u8..9, proptest::bool::weighted(0.1))
            .prop_map(|(id, zone, addr, draining)| Step::Join { id, zone, addr, draining }),
        1 => id.clone().prop_map(|id| Step::Drain { id }),
        1 => id.clone().prop_map(|id| Step::Remove { id }),
        3 => (0u8..3, 1u32..5, 1u32..4)
            .prop_map(|(topic, partitions, rf)| Step::CreatePlaced { topic, partitions, rf }),
        1 => (0u8..3, proptest::collection::vec(replicas.clone(), 0..4))
            .prop_map(|(topic, replicas)| Step::CreateRaw { topic, replicas }),
        1 => (0u8..3, any::<bool>(), 0u8..6)
            .prop_map(|(topic, retention, change_fixed)| Step::UpdateTopic { topic, retention, change_fixed }),
        1 => (0u8..3).prop_map(|topic| Step::DeleteTopic { topic }),
        2 => (0u8..3, 0u8..2).prop_map(|(topic, name)| Step::Subscribe { topic, name }),
        1 => (0u8..3, 0u8..2, any::<bool>())
            .prop_map(|(topic, name, new_uid)| Step::UpdateSubscription { topic, name, new_uid }),
        1 => (0u8..3, 0u8..2).prop_map(|(topic, name)| Step::Unsubscribe { topic, name }),
        2 => (0u8..3, 0u32..5, replicas)
            .prop_map(|(topic, partition, replicas)| Step::SetPlacement { topic, partition, replicas }),
        1 => id.prop_map(|id| Step::DrainPlan { id }),
    ]
}

fn topic_name(topic: u8) -> String {
    format!("t{topic}")
}

/// The commands a step stands for in this state (several for a drain plan).
fn commands(state: &ClusterState, step: &Step) -> Vec<Command> {
    match step.clone() {
        Step::Join {
            id,
            zone,
            addr,
            draining,
        } => {
            let mut record = node(id, &format!("z{zone}"));
            record.cluster_addr = format!("10.0.0.{addr}:7001");
            if draining {
                record.state = NodeState::Draining;
            }
            vec![Command::UpsertNode(record)]
        }
        Step::Drain { id } => vec![Command::DrainNode { id }],
        Step::Remove { id } => vec![Command::RemoveNode { id }],
        Step::CreatePlaced {
            topic,
            partitions,
            rf,
        } => {
            let placement = place(
                &state.active_nodes(),
                &PlacementLoad::of(state),
                partitions,
                rf,
            )
            .unwrap_or_default();
            let config = topic_config(&topic_name(topic), partitions, rf);
            vec![Command::CreateTopic(TopicRecord { config, placement })]
        }
        Step::CreateRaw { topic, replicas } => {
            let rf = replicas.first().map_or(1, |r| r.len() as u32);
            let config = topic_config(&topic_name(topic), replicas.len() as u32, rf);
            let placement = replicas
                .into_iter()
                .map(|replicas| PartitionPlacement { replicas })
                .collect();
            vec![Command::CreateTopic(TopicRecord { config, placement })]
        }
        Step::UpdateTopic {
            topic,
            retention,
            change_fixed,
        } => {
            let mut config = state.topic(&topic_name(topic)).map_or_else(
                || topic_config(&topic_name(topic), 1, 1),
                |t| t.config.clone(),
            );
            config.retention_ms = retention.then_some(3_600_000);
            match change_fixed {
                0 => config.partitions += 1,
                1 => config.uid += 1,
                _ => {}
            }
            vec![Command::UpdateTopic { config }]
        }
        Step::DeleteTopic { topic } => vec![Command::DeleteTopic {
            name: topic_name(topic),
        }],
        Step::Subscribe { topic, name } => {
            vec![Command::CreateSubscription(subscription(
                &topic_name(topic),
                &format!("s{name}"),
            ))]
        }
        Step::UpdateSubscription {
            topic,
            name,
            new_uid,
        } => {
            let mut config = subscription(&topic_name(topic), &format!("s{name}"));
            config.max_deliveries = 5;
            if new_uid {
                config.uid += 1;
            }
            vec![Command::UpdateSubscription(config)]
        }
        Step::Unsubscribe { topic, name } => vec![Command::DeleteSubscription {
            topic: topic_name(topic),
            name: format!("s{name}"),
        }],
        Step::SetPlacement {
            topic,
            partition,
            replicas,
        } => vec![Command::SetPlacement {
            topic: topic_name(topic),
            partition,
            replicas,
        }],
        Step::DrainPlan { id } => plan_drain(state, id),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_commands_keep_the_state_valid_and_refusals_change_nothing(
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut state = ClusterState::new();
        for step in &steps {
            for command in commands(&state, step) {
                let before = serde_json::to_string(&state).expect("serializable");
                match state.apply(&command) {
                    Ok(()) => prop_assert_eq!(state.validate(), Ok(()), "after {:?}", command),
                    Err(error) => prop_assert_eq!(
                        serde_json::to_string(&state).expect("serializable"),
                        before,
                        "{:?} refused with {} changed the state", command, error
                    ),
                }
            }
        }
        let json = serde_json::to_string(&state).expect("serializable");
        let back: ClusterState = serde_json::from_str(&json).expect("deserializable");
        prop_assert_eq!(back, state);
    }

    #[test]
    fn a_drain_plan_empties_a_draining_node_and_is_accepted(
        steps in proptest::collection::vec(step(), 1..60),
        drained in 1u64..=7,
    ) {
        let mut state = ClusterState::new();
        for step in &steps {
            for command in commands(&state, step) {
                let _refused_or_not = state.apply(&command);
            }
        }
        if state.apply(&Command::DrainNode { id: drained }).is_ok() {
            for command in plan_drain(&state, drained) {
                prop_assert_eq!(state.apply(&command), Ok(()), "{:?}", command);
            }
            prop_assert_eq!(state.first_replica_on(drained), None);
        }
    }
}
