//! A small clean history and helpers to build and alter histories by hand.

use wharf_reliability::event::{
    Ack, Deliver, Drain, Drained, Event, Fault, Leader, NodeId, Offset, Outcome, Partition, Phase,
    Produce, Run,
};
use wharf_reliability::{History, Report, check};

/// The cluster every hand-written history runs on.
pub const NODES: [NodeId; 3] = [1, 2, 3];

/// The header of the hand-written histories: test R1, two partitions, three nodes, one fault kind.
pub fn run() -> Event {
    Event::Run(Run {
        id: "R1".to_owned(),
        name: "leader-kill".to_owned(),
        seed: 42,
        faults: vec!["kill_leader".to_owned()],
        require_leader_change: true,
        partitions: 2,
        nodes: NODES.to_vec(),
        consumed_through: vec![],
        replicas: Default::default(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    })
}

/// A produce operation; `at` is (partition, offset) when the reply named them.
pub fn produce(
    process: u32,
    value: &str,
    key: Option<&str>,
    at: Option<(Partition, Offset)>,
    times: (u64, u64),
    outcome: Outcome,
) -> Event {
    Event::Produce(Produce {
        process,
        value: value.to_owned(),
        key: key.map(str::to_owned),
        partition: at.map(|(partition, _)| partition),
        offset: at.map(|(_, offset)| offset),
        node: 1,
        invoke_ms: times.0,
        complete_ms: times.1,
        outcome,
        status: None,
        code: None,
        duplicate: false,
    })
}

/// A delivery to consumer process 10 through subscription `s`.
pub fn deliver(value: &str, at: (Partition, Offset), attempt: u32, received_ms: u64) -> Event {
    Event::Deliver(Deliver {
        process: 10,
        subscription: "s".to_owned(),
        value: value.to_owned(),
        partition: at.0,
        offset: at.1,
        attempt,
        received_ms,
        receive_invoke_ms: None,
        node: 1,
    })
}

/// An ack by consumer process 10 in subscription `s`.
pub fn ack(value: &str, times: (u64, u64), outcome: Outcome) -> Event {
    Event::Ack(Ack {
        process: 10,
        subscription: "s".to_owned(),
        value: value.to_owned(),
        invoke_ms: times.0,
        complete_ms: times.1,
        outcome,
        status: None,
        code: None,
    })
}

/// One drained record.
pub fn drain(node: NodeId, partition: Partition, offset: Offset, value: &str) -> Event {
    Event::Drain(Drain {
        node,
        partition,
        offset,
        value: value.to_owned(),
        key: None,
    })
}

/// `node`'s drain of `partition` holding `values` at offsets 0, 1, 2…, and its `drained` line.
pub fn drain_log(node: NodeId, partition: Partition, values: &[&str]) -> Vec<Event> {
    let mut events: Vec<Event> = (0..)
        .zip(values)
        .map(|(offset, value)| drain(node, partition, offset, value))
        .collect();
    events.push(drained(node, partition, values.len() as u64));
    events
}

/// A finished drain.
pub fn drained(node: NodeId, partition: Partition, records: u64) -> Event {
    Event::Drained(Drained {
        node,
        partition,
        records,
    })
}

/// A fault start or end.
pub fn fault(phase: Phase, at_ms: u64, installed: bool) -> Event {
    Event::Fault(Fault {
        name: "kill_leader".to_owned(),
        node: Some(1),
        at_ms,
        phase,
        installed,
    })
}

/// An observed leader.
pub fn leader(partition: Partition, node: NodeId, term: u64, at_ms: u64) -> Event {
    Event::Leader(Leader {
        partition,
        node,
        term,
        at_ms,
    })
}

/// Partition 0's log in the clean history.
pub const PARTITION_0: [&str; 3] = ["p0-0", "p0-1", "p0-2"];

/// Partition 1's log in the clean history.
pub const PARTITION_1: [&str; 3] = ["p1-0", "p1-1", "p1-3"];

/// A clean history: 7 produces (5 ok, `p1-1` unknown but recovered at (1, 1), `p1-2` refused),
/// per-key writes in order, one installed leader kill, a leader change on each partition, three
/// nodes whose drains agree, and deliveries acked in a legal order (`p1-0` redelivered after an
/// ack that timed out).
pub fn clean() -> Vec<Event> {
    let mut events = vec![
        run(),
        produce(0, "p0-0", Some("k0"), Some((0, 0)), (10, 20), Outcome::Ok),
        produce(1, "p1-0", Some("k1"), Some((1, 0)), (12, 22), Outcome::Ok),
        produce(0, "p0-1", Some("k0"), Some((0, 1)), (30, 40), Outcome::Ok),
        produce(1, "p1-1", None, None, (35, 1035), Outcome::Info),
        produce(0, "p0-2", Some("k0"), Some((0, 2)), (50, 60), Outcome::Ok),
        deliver("p0-0", (0, 0), 1, 100),
        ack("p0-0", (101, 105), Outcome::Ok),
        deliver("p1-0", (1, 0), 1, 110),
        ack("p1-0", (111, 2111), Outcome::Info),
        leader(0, 1, 1, 0),
        leader(1, 2, 1, 0),
        fault(Phase::Start, 500, true),
        leader(0, 2, 2, 700),
        leader(1, 3, 2, 700),
        fault(Phase::End, 900, true),
        produce(1, "p1-2", None, None, (1100, 1110), Outcome::Fail),
        produce(
            1,
            "p1-3",
            Some("k1"),
            Some((1, 2)),
            (1200, 1210),
            Outcome::Ok,
        ),
        deliver("p1-0", (1, 0), 2, 2200),
        ack("p1-0", (2201, 2205), Outcome::Ok),
    ];
    for node in NODES {
        events.extend(drain_log(node, 0, &PARTITION_0));
        events.extend(drain_log(node, 1, &PARTITION_1));
    }
    events
}

/// Checks `events` as a history.
pub fn report(events: Vec<Event>) -> Report {
    match History::from_events(events) {
        Ok(history) => check(&history),
        Err(error) => panic!("the hand-written history is not a history: {error}"),
    }
}

/// `events` with `node`'s drain of `partition` replaced by `values` at offsets 0, 1, 2….
pub fn with_log(
    mut events: Vec<Event>,
    node: NodeId,
    partition: Partition,
    values: &[&str],
) -> Vec<Event> {
    events.retain(|event| !is_drain_of(event, node, partition));
    events.extend(drain_log(node, partition, values));
    events
}

/// `events` with `node`'s drain of `partition` replaced by `records` (offset, value), read in
/// that order.
pub fn with_records(
    mut events: Vec<Event>,
    node: NodeId,
    partition: Partition,
    records: &[(Offset, &str)],
) -> Vec<Event> {
    events.retain(|event| !is_drain_of(event, node, partition));
    for &(offset, value) in records {
        events.push(drain(node, partition, offset, value));
    }
    events.push(drained(node, partition, records.len() as u64));
    events
}

/// `events` with every node's drain of `partition` replaced by `values`.
pub fn with_logs(mut events: Vec<Event>, partition: Partition, values: &[&str]) -> Vec<Event> {
    for node in NODES {
        events = with_log(events, node, partition, values);
    }
    events
}

fn is_drain_of(event: &Event, node: NodeId, partition: Partition) -> bool {
    match event {
        Event::Drain(d) => d.node == node && d.partition == partition,
        Event::Drained(d) => d.node == node && d.partition == partition,
        _ => false,
    }
}

/// `events` with the produce of `value` changed by `change`.
pub fn with_produce(
    mut events: Vec<Event>,
    value: &str,
    change: impl Fn(&mut Produce),
) -> Vec<Event> {
    for event in &mut events {
        if let Event::Produce(produce) = event
            && produce.value == value
        {
            change(produce);
        }
    }
    events
}
