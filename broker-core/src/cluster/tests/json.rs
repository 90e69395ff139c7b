//! The state (the controller's snapshot) and every command (a log entry) survive JSON.

use super::fixtures::{accept, cluster, node, nodes, placed_topic, subscription, topic_config};
use crate::cluster::{ClusterState, Command};

fn every_command() -> Vec<Command> {
    let state = cluster(&nodes(3, 3));
    vec![
        Command::UpsertNode(node(4, "z3")),
        Command::DrainNode { id: 4 },
        Command::RemoveNode { id: 4 },
        Command::CreateTopic(placed_topic(&state, "t", 2, 3)),
        Command::UpdateTopic {
            config: topic_config("t", 2, 3),
        },
        Command::DeleteTopic { name: "t".into() },
        Command::CreateSubscription(subscription("t", "s")),
        Command::UpdateSubscription(subscription("t", "s")),
        Command::DeleteSubscription {
            topic: "t".into(),
            name: "s".into(),
        },
        Command::SetPlacement {
            topic: "t".into(),
            partition: 1,
            replicas: vec![3, 1, 2],
        },
    ]
}

#[test]
fn every_command_survives_a_json_round_trip() {
    for command in every_command() {
        let json = serde_json::to_string(&command).expect("serializable");
        let back: Command = serde_json::from_str(&json).expect("deserializable");
        assert_eq!(back, command, "{json}");
    }
}

#[test]
fn commands_are_tagged_by_type_in_snake_case() {
    let json = serde_json::to_value(Command::DrainNode { id: 4 }).expect("serializable");
    assert_eq!(json, serde_json::json!({"type": "drain_node", "id": 4}));
    let json = serde_json::to_value(Command::UpsertNode(node(4, "z3"))).expect("serializable");
    assert_eq!(json["type"], "upsert_node");
    assert_eq!(json["state"], "active");
}

#[test]
fn the_state_survives_a_json_round_trip() {
    let mut state = cluster(&nodes(4, 2));
    let topic = placed_topic(&state, "t", 3, 2);
    accept(&mut state, Command::CreateTopic(topic));
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "s")),
    );
    accept(&mut state, Command::DrainNode { id: 4 });
    let json = serde_json::to_string(&state).expect("serializable");
    let back: ClusterState = serde_json::from_str(&json).expect("deserializable");
    assert_eq!(back, state);
    assert_eq!(serde_json::to_string(&back).expect("serializable"), json);
    back.validate().expect("valid");
}
