//! Idempotent produce through the broker facade: ids produced concurrently or repeated.

use std::sync::Arc;

use broker_core::Broker;
use broker_core::broker::{AckMode, NewMessage, Produced};

use crate::support::{broker_with_topic, text};

/// Concurrent producers in the tests below: enough to overlap on two cores.
const PRODUCERS: usize = 8;

fn with_id(id: &str, value: &'static str) -> NewMessage {
    NewMessage {
        id: Some(id.into()),
        value: bytes::Bytes::from_static(value.as_bytes()),
        ..NewMessage::default()
    }
}

/// Produces one message on `t` and returns its entry of the reply.
async fn produce_one(broker: &Broker, message: NewMessage) -> Produced {
    let outcome = broker
        .produce("t", vec![message], AckMode::Leader)
        .await
        .expect("produce");
    outcome.messages.into_iter().next().expect("one entry")
}

fn stored_messages(broker: &Broker) -> u64 {
    let topic = broker.describe_topic("t").expect("topic");
    topic.partitions.iter().map(|p| p.end_offset).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_produces_of_one_id_store_it_once_and_all_answer_with_its_place() {
    let (_dir, broker) = broker_with_topic(4).await;

    let producers = (0..PRODUCERS).map(|_| {
        let broker = Arc::clone(&broker);
        tokio::spawn(async move { produce_one(&broker, with_id("once", "v")).await })
    });
    let answers: Vec<Produced> = futures_util::future::join_all(producers)
        .await
        .into_iter()
        .map(|joined| joined.expect("join"))
        .collect();

    assert_eq!(stored_messages(&broker), 1);
    assert_eq!(answers.iter().filter(|a| !a.duplicate).count(), 1);
    let first = &answers[0];
    assert!(first.offset.is_some());
    for answer in &answers {
        assert_eq!(
            (answer.partition, answer.offset),
            (first.partition, first.offset)
        );
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_produces_of_distinct_ids_each_store_their_message() {
    let (_dir, broker) = broker_with_topic(1).await;

    let producers = (0..PRODUCERS).map(|n| {
        let broker = Arc::clone(&broker);
        let id = format!("id-{n}");
        tokio::spawn(async move { produce_one(&broker, with_id(&id, "v")).await })
    });
    let answers = futures_util::future::join_all(producers).await;

    let mut offsets: Vec<u64> = answers
        .into_iter()
        .map(|joined| joined.expect("join"))
        .inspect(|answer| assert!(!answer.duplicate))
        .map(|answer| answer.offset.expect("an offset"))
        .collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..PRODUCERS as u64).collect::<Vec<_>>());
    broker.shutdown().await;
}

#[tokio::test]
async fn a_repeat_of_an_id_answers_with_the_first_result_and_stores_nothing() {
    let (_dir, broker) = broker_with_topic(1).await;
    let first = produce_one(&broker, with_id("a", "first")).await;

    let repeat = produce_one(&broker, with_id("a", "second")).await;

    assert!(!first.duplicate);
    assert!(repeat.duplicate);
    assert_eq!(
        (repeat.partition, repeat.offset),
        (first.partition, first.offset)
    );
    assert_eq!(stored_messages(&broker), 1);
    broker.shutdown().await;
}

#[tokio::test]
async fn a_fire_and_forget_produce_with_an_id_makes_a_later_produce_of_it_a_duplicate() {
    let (_dir, broker) = broker_with_topic(1).await;
    let queued = broker
        .produce("t", vec![with_id("a", "first")], AckMode::None)
        .await
        .expect("queued");
    assert_eq!(queued.messages[0].offset, None);

    let repeat = produce_one(&broker, with_id("a", "second")).await;

    assert!(repeat.duplicate, "the first one was written");
    assert_eq!(repeat.offset, None, "the first result had no offset");
    assert_eq!(stored_messages(&broker), 1);
    broker.shutdown().await;
}

#[tokio::test]
async fn partition_for_key_names_the_partition_produce_puts_a_keyed_message_in() {
    let (_dir, broker) = broker_with_topic(5).await;
    for i in 0..20 {
        let key = format!("k{i}");
        let message = NewMessage {
            key: Some(key.clone()),
            ..text("v")
        };
        let produced = produce_one(&broker, message).await;
        let named = broker.partition_for_key("t", &key).expect("partition");
        assert_eq!(named, produced.partition, "key {key}");
    }
}

#[tokio::test]
async fn check_batch_refuses_what_produce_refuses_and_writes_nothing() {
    let (_dir, broker) = broker_with_topic(2).await;
    let bad_key = NewMessage {
        key: Some(String::new()),
        ..text("v")
    };
    assert!(broker.check_batch("t", &[text("ok")]).is_ok());
    assert!(broker.check_batch("t", &[]).is_err());
    assert!(broker.check_batch("t", &[text("ok"), bad_key]).is_err());
    assert_eq!(stored_messages(&broker), 0);
}
