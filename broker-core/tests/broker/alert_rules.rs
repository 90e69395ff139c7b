//! What the broker keeps for alerts: rules stored as opaque bytes survive a restart and a
//! removed one stays removed; a receive is noted as the subscription's last activity.

use broker_core::broker::types::ReceiveRequest;
use broker_core::clock::steady_ms;
use broker_core::config::FsyncPolicy;

use crate::support::{create_subscription, create_topic, open};

#[tokio::test]
async fn alert_rules_survive_a_restart_and_a_removed_one_stays_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broker = open(dir.path(), FsyncPolicy::Always).await;
    assert!(broker.alert_rules().expect("list").is_empty());
    broker.save_alert_rule("b", b"second").await.expect("save");
    broker.save_alert_rule("a", b"first").await.expect("save");
    broker
        .save_alert_rule("a", b"first, changed")
        .await
        .expect("replace");
    broker.save_alert_rule("c", b"third").await.expect("save");
    assert!(broker.remove_alert_rule("c").await.expect("remove"));
    assert!(!broker.remove_alert_rule("c").await.expect("remove again"));
    broker.shutdown().await;
    drop(broker);

    let broker = open(dir.path(), FsyncPolicy::Always).await;
    let rules = broker.alert_rules().expect("list");
    assert_eq!(
        rules,
        [
            ("a".to_owned(), b"first, changed".to_vec()),
            ("b".to_owned(), b"second".to_vec()),
        ]
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn a_receive_is_noted_as_the_subscriptions_last_activity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broker = open(dir.path(), FsyncPolicy::Always).await;
    create_topic(&broker, 1).await;
    create_subscription(&broker, None).await;
    assert_eq!(broker.last_receive_ms("t", "s").expect("known"), None);
    let before = steady_ms();
    let request = ReceiveRequest {
        max_messages: 1,
        wait_ms: 0,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    };
    broker.receive("t", "s", request).await.expect("receive");
    let noted = broker
        .last_receive_ms("t", "s")
        .expect("known")
        .expect("noted");
    assert!(
        noted >= before && noted <= steady_ms(),
        "{before} <= {noted}"
    );
    assert!(broker.last_receive_ms("t", "nope").is_err());
    let share = broker
        .used_disk_share()
        .expect("the test's file system answers");
    assert!((0.0..=1.0).contains(&share), "{share}");
    broker.shutdown().await;
}
