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
        Command::PutAlertRule {
            name: "r".into(),
            rule: r#"{"rule":{"name":"r"},"secret":null}"#.into(),
        },
        Command::DeleteAlertRule { name: "r".into() },
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

#[test]
fn alert_rules_are_put_replaced_and_deleted_and_old_snapshots_still_decode() {
    let mut state = cluster(&nodes(3, 3));
    let before = serde_json::to_string(&state).expect("serializable");
    assert!(
        !before.contains("alert_rules"),
        "a state without rules serializes as before alerts were metadata: {before}"
    );
    let old: ClusterState = serde_json::from_str(&before).expect("an old snapshot decodes");
    assert_eq!(old, state);
    let put = |rule: &str| Command::PutAlertRule {
        name: "r".into(),
        rule: rule.into(),
    };
    accept(&mut state, put("one"));
    accept(&mut state, put("two"));
    assert_eq!(state.alert_rule("r"), Some("two"));
    let json = serde_json::to_string(&state).expect("serializable");
    let back: ClusterState = serde_json::from_str(&json).expect("deserializable");
    assert_eq!(back, state);
    accept(&mut state, Command::DeleteAlertRule { name: "r".into() });
    accept(&mut state, Command::DeleteAlertRule { name: "r".into() });
    assert!(state.alert_rules().is_empty());
}
