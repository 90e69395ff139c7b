//! Subscription rules, and that deleting a topic deletes its subscriptions.

use super::fixtures::{accept, cluster, nodes, placed_topic, refuse, subscription};
use crate::cluster::{ClusterError, ClusterState, Command};

fn with_topic(name: &str) -> ClusterState {
    let mut state = cluster(&nodes(1, 1));
    let topic = placed_topic(&state, name, 1, 1);
    accept(&mut state, Command::CreateTopic(topic));
    state
}

#[test]
fn a_subscription_on_an_existing_topic_is_created() {
    let mut state = with_topic("t");
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "s")),
    );
    assert_eq!(state.subscription("t", "s"), Some(&subscription("t", "s")));
    assert_eq!(state.subscriptions("t").count(), 1);
}

#[test]
fn a_subscription_on_a_missing_topic_is_refused() {
    let mut state = with_topic("t");
    assert_eq!(
        refuse(
            &mut state,
            Command::CreateSubscription(subscription("u", "s"))
        ),
        ClusterError::TopicNotFound { topic: "u".into() }
    );
}

#[test]
fn a_second_subscription_of_the_same_name_is_refused() {
    let mut state = with_topic("t");
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "s")),
    );
    assert_eq!(
        refuse(
            &mut state,
            Command::CreateSubscription(subscription("t", "s"))
        ),
        ClusterError::SubscriptionExists {
            topic: "t".into(),
            name: "s".into()
        }
    );
}

#[test]
fn an_update_replaces_a_subscription_but_not_its_uid_or_creation_time() {
    let mut state = with_topic("t");
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "s")),
    );
    let mut changed = subscription("t", "s");
    changed.max_deliveries = 3;
    accept(&mut state, Command::UpdateSubscription(changed.clone()));
    assert_eq!(state.subscription("t", "s"), Some(&changed));
    let mut reborn = changed.clone();
    reborn.uid += 1;
    assert_eq!(
        refuse(&mut state, Command::UpdateSubscription(reborn)),
        ClusterError::ImmutableSubscriptionField {
            topic: "t".into(),
            name: "s".into(),
            field: "uid",
            stored: changed.uid,
            proposed: changed.uid + 1
        }
    );
    let mut redated = changed;
    redated.created_ms += 1;
    assert!(matches!(
        refuse(&mut state, Command::UpdateSubscription(redated)),
        ClusterError::ImmutableSubscriptionField {
            field: "created_ms",
            ..
        }
    ));
}

#[test]
fn updating_or_deleting_a_missing_subscription_is_refused() {
    let mut state = with_topic("t");
    let missing = ClusterError::SubscriptionNotFound {
        topic: "t".into(),
        name: "s".into(),
    };
    assert_eq!(
        refuse(
            &mut state,
            Command::UpdateSubscription(subscription("t", "s"))
        ),
        missing
    );
    let delete = |topic: &str| Command::DeleteSubscription {
        topic: topic.into(),
        name: "s".into(),
    };
    assert_eq!(refuse(&mut state, delete("t")), missing);
    assert_eq!(
        refuse(&mut state, delete("u")),
        ClusterError::TopicNotFound { topic: "u".into() }
    );
}

#[test]
fn deleting_the_last_subscription_leaves_no_empty_map() {
    let mut state = with_topic("t");
    let empty = state.clone();
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "s")),
    );
    accept(
        &mut state,
        Command::DeleteSubscription {
            topic: "t".into(),
            name: "s".into(),
        },
    );
    assert_eq!(state, empty);
}

#[test]
fn deleting_a_topic_deletes_its_subscriptions_and_its_name_can_be_reused() {
    let mut state = with_topic("t");
    let topic = placed_topic(&state, "other", 1, 1);
    accept(&mut state, Command::CreateTopic(topic));
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "a")),
    );
    accept(
        &mut state,
        Command::CreateSubscription(subscription("t", "b")),
    );
    accept(
        &mut state,
        Command::CreateSubscription(subscription("other", "a")),
    );
    accept(&mut state, Command::DeleteTopic { name: "t".into() });
    assert_eq!(state.topic("t"), None);
    assert_eq!(state.subscriptions("t").count(), 0);
    assert_eq!(state.subscriptions("other").count(), 1);
    let topic = placed_topic(&state, "t", 1, 1);
    accept(&mut state, Command::CreateTopic(topic));
    assert_eq!(state.subscriptions("t").count(), 0);
}
