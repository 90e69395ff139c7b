use super::*;

fn message(id: &str, due_ms: u64, seq: u64) -> Scheduled {
    Scheduled {
        due_ms,
        seq,
        partition: 1,
        record: Record {
            id: id.into(),
            timestamp_ms: 5,
            key: Some("k".into()),
            value: Bytes::from_static(b"v"),
            binary: false,
            scheduled: false,
            client_id: false,
            headers: vec![("h".into(), "v".into())],
            tags: vec!["t".into()],
            trace: None,
            origin: None,
        },
    }
}

fn store() -> DelayStore {
    let db = sled::Config::new().temporary(true).open().expect("sled");
    DelayStore::new(db.open_tree("d").expect("tree"))
}

fn at(position: u64) -> LogPosition {
    LogPosition {
        segment_base: 0,
        position,
    }
}

/// Applies `messages` as scheduled events of partition 1.
fn stored(store: &DelayStore, messages: &[Scheduled]) {
    let mut changes = ScheduleChanges::default();
    messages.iter().cloned().for_each(|m| changes.scheduled(m));
    store.apply(1, &changes, at(100)).expect("apply");
}

fn ids(messages: Vec<Scheduled>) -> Vec<String> {
    messages.into_iter().map(|m| m.record.id).collect()
}

fn cancel(store: &DelayStore, id: &str) -> bool {
    match store.begin_cancel(id).expect("cancel") {
        Some(cancelling) => {
            store.end_cancel(cancelling, true);
            true
        }
        None => false,
    }
}

#[test]
fn messages_in_sled_and_in_memory_come_due_together_in_due_order_and_not_before() {
    let store = store();
    stored(&store, &[message("b", 200, 2), message("d", 400, 4)]);
    store.scheduled(vec![message("a", 100, 1), message("c", 200, 3)]);
    assert_eq!(store.next_due().expect("next"), Some(100));
    assert!(store.due(99, 10).expect("due").is_empty());
    assert_eq!(ids(store.due(200, 10).expect("due")), vec!["a", "b", "c"]);
    assert_eq!(ids(store.due(u64::MAX, 2).expect("due")), vec!["a", "b"]);
    assert_eq!(store.due(100, 10).expect("due")[0], message("a", 100, 1));
    assert_eq!(store.position(1).expect("position"), Some(at(100)));
    assert_eq!(store.position(2).expect("position"), None);
}

#[test]
fn a_cancelled_message_never_comes_due_and_cancel_is_once_wherever_it_lives() {
    let store = store();
    stored(&store, &[message("a", 100, 1)]);
    store.scheduled(vec![message("b", 100, 2)]);
    assert!(cancel(&store, "a"));
    assert!(cancel(&store, "b"));
    assert!(!cancel(&store, "a"));
    assert!(!cancel(&store, "b"));
    assert!(!cancel(&store, "unknown"));
    assert!(store.due(1_000, 10).expect("due").is_empty());
    assert_eq!(store.next_due().expect("next"), None);
}

#[test]
fn a_claimed_message_cannot_be_cancelled_until_its_claim_ends() {
    let store = store();
    stored(&store, &[message("a", 100, 1), message("b", 300, 2)]);
    let (due, claim) = store.claim_due(100, 10).expect("claim");
    assert_eq!(due, vec![message("a", 100, 1)]);
    assert!(!cancel(&store, "a"), "a is being moved");
    assert!(cancel(&store, "b"), "b was not claimed");
    drop(claim);
    assert!(
        cancel(&store, "a"),
        "a move that did not finish leaves the message cancellable"
    );
}

#[test]
fn a_message_being_cancelled_is_not_claimed_and_comes_back_if_the_cancel_fails() {
    let store = store();
    store.scheduled(vec![message("a", 100, 1)]);
    let cancelling = store.begin_cancel("a").expect("cancel").expect("found");
    let (due, _claim) = store.claim_due(100, 10).expect("claim");
    assert!(due.is_empty());
    store.end_cancel(cancelling, false);
    assert_eq!(ids(store.due(100, 10).expect("due")), vec!["a"]);
}

#[test]
fn a_moved_message_stays_hidden_until_sled_has_its_removal() {
    let store = store();
    stored(&store, &[message("a", 100, 1), message("b", 300, 2)]);
    let (due, mut claim) = store.claim_due(100, 10).expect("claim");
    assert_eq!(ids(due), vec!["a"]);
    claim.moved(&[(100, 1)]);
    drop(claim);
    assert!(
        !cancel(&store, "a"),
        "a moved message is no longer cancellable"
    );
    assert_eq!(store.next_due().expect("next"), Some(300));

    let mut changes = ScheduleChanges::default();
    changes.moved("a", |id| store.lookup_id(id)).expect("moved");
    store.apply(1, &changes, at(200)).expect("apply");

    assert!(store.is_overlay_empty());
    assert_eq!(store.count(), 1);
    assert_eq!(store.next_due().expect("next"), Some(300));
    assert_eq!(store.position(1).expect("position"), Some(at(200)));
}

#[test]
fn memory_past_its_bound_refuses_more_until_the_applier_catches_up() {
    let store = store();
    let mut big = message("big", 100, 1);
    big.record.value = Bytes::from(vec![0; MAX_UNAPPLIED_BYTES]);
    store.check_room().expect("room at first");
    store.scheduled(vec![big]);
    assert!(matches!(
        store.check_room(),
        Err(BrokerError::Overloaded { .. })
    ));
    let mut changes = ScheduleChanges::default();
    changes.scheduled(message("big", 100, 1));
    store.apply(1, &changes, at(100)).expect("apply");
    store.check_room().expect("room again");
}

#[test]
fn memory_holding_one_message_less_than_its_bound_has_room_and_at_the_bound_has_none() {
    let store = store();
    let below: Vec<Scheduled> = (0..MAX_UNAPPLIED_MESSAGES as u64 - 1)
        .map(|seq| message(&format!("m{seq}"), 100, seq))
        .collect();
    store.scheduled(below);
    store.check_room().expect("room one below the bound");
    let last = MAX_UNAPPLIED_MESSAGES as u64 - 1;
    store.scheduled(vec![message(&format!("m{last}"), 100, last)]);
    assert!(matches!(
        store.check_room(),
        Err(BrokerError::Overloaded { .. })
    ));
}

#[test]
fn a_partitions_image_replaces_that_partitions_schedule_only_and_counts_go_by_partition() {
    let source = store();
    stored(&source, &[message("a", 10, 1), message("b", 20, 2)]);
    let image = source.partition_image(1).expect("image");
    assert_eq!(image.len(), 2);
    assert!(source.partition_image(0).expect("image").is_empty());

    let target = store();
    let mut other = message("other", 5, 3);
    other.partition = 0;
    let mut changes = ScheduleChanges::default();
    changes.scheduled(other);
    target.apply(0, &changes, at(7)).expect("apply");
    // What the target had of partition 1 and the image lacks goes; the image's come in.
    stored(&target, &[message("gone", 15, 4), message("a", 10, 1)]);
    target
        .replace_partition(1, &image, LogPosition::default())
        .expect("replaced");
    assert_eq!(
        ids(target.due(u64::MAX, 10).expect("due")),
        vec!["other", "a", "b"]
    );
    assert_eq!(target.lookup_id("gone").expect("lookup"), None);
    assert_eq!(target.lookup_id("b").expect("lookup"), Some((20, 2)));
    assert_eq!(target.position(1).expect("position"), Some(at(0)));
    assert_eq!(target.position(0).expect("position"), Some(at(7)));
    assert_eq!(target.count_by_partition(2).expect("counts"), vec![1, 2]);
}

#[test]
fn a_claim_of_some_partitions_takes_neither_the_others_messages_nor_their_room() {
    let store = store();
    let other = |id: &str, due_ms: u64, seq: u64| Scheduled {
        partition: 0,
        ..message(id, due_ms, seq)
    };
    stored(&store, &[other("a", 100, 1), message("b", 200, 2)]);
    store.scheduled(vec![other("c", 100, 3), message("d", 200, 4)]);
    let (due, claim) = store
        .claim_due_of(200, 2, &|partition| partition == 1)
        .expect("claim");
    assert_eq!(ids(due), vec!["b", "d"]);
    drop(claim);
    let (due, _claim) = store.claim_due(200, 10).expect("claim");
    assert_eq!(ids(due), vec!["a", "c", "b", "d"]);
}
