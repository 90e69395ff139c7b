//! A random clean history, built from a plan by a model of the cluster: one log per partition that
//! every node agrees on, producers acknowledged only for what the log holds, consumers that ack in
//! a legal order.

use proptest::prelude::*;
use wharf_reliability::event::{
    Ack, Deliver, Drain, Drained, Event, Fault, Leader, NodeId, Offset, Outcome, Partition, Phase,
    Produce, Run,
};

/// The cluster the generated histories run on.
pub const NODES: [NodeId; 3] = [1, 2, 3];

/// What became of one produce operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Acknowledged and stored.
    Acked,
    /// Timed out, but stored.
    Recovered,
    /// Timed out and never stored.
    Vanished,
    /// Refused with a 503 before storing.
    Refused,
}

/// How a consumer handled one stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumption {
    /// Never received.
    Unread,
    /// Received once and acked.
    Acked,
    /// Received, the ack timed out, received again and acked.
    AckTimedOut,
    /// Received, the lease expired without an ack, received again and acked.
    LeaseExpired,
    /// Received, the ack was refused, received again and acked.
    AckRefused,
}

/// One produce operation of the plan.
#[derive(Debug, Clone)]
pub struct Op {
    process: u32,
    key: Option<u8>,
    fate: Fate,
    took_ms: u64,
}

/// A run's plan: what the producers did and how the consumer handled each stored message.
#[derive(Debug, Clone)]
pub struct Plan {
    partitions: Partition,
    ops: Vec<Op>,
    consumptions: Vec<Consumption>,
}

/// A plan of 2 to 40 operations whose first two are acknowledged writes of key 0 by process 0,
/// and whose first stored message is received once and acked: every anomaly the tests inject
/// has something to act on.
pub fn plan() -> impl Strategy<Value = Plan> {
    let op = (0..4u32, proptest::option::of(0..3u8), fate(), 1..40u64).prop_map(
        |(process, key, fate, took_ms)| Op {
            process,
            key,
            fate,
            took_ms,
        },
    );
    (
        1..=3u32,
        proptest::collection::vec(op, 0..38),
        proptest::collection::vec(consumption(), 40),
    )
        .prop_map(|(partitions, mut ops, mut consumptions)| {
            let first = Op {
                process: 0,
                key: Some(0),
                fate: Fate::Acked,
                took_ms: 5,
            };
            ops.splice(0..0, [first.clone(), first]);
            consumptions[0] = Consumption::Acked;
            Plan {
                partitions,
                ops,
                consumptions,
            }
        })
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        6 => Just(Fate::Acked),
        1 => Just(Fate::Recovered),
        1 => Just(Fate::Vanished),
        1 => Just(Fate::Refused),
    ]
}

fn consumption() -> impl Strategy<Value = Consumption> {
    prop_oneof![
        Just(Consumption::Unread),
        Just(Consumption::Acked),
        Just(Consumption::AckTimedOut),
        Just(Consumption::LeaseExpired),
        Just(Consumption::AckRefused),
    ]
}

/// The counts a clean history built from a plan must show.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// Values acknowledged.
    pub acked: u64,
    /// Values whose outcome was unknown.
    pub unknown: u64,
    /// Unknown values that were stored.
    pub recovered: u64,
    /// Values refused.
    pub failed: u64,
}

impl Plan {
    /// The counts the history of this plan must show.
    pub fn expected(&self) -> Expected {
        let mut expected = Expected::default();
        for op in &self.ops {
            match op.fate {
                Fate::Acked => expected.acked += 1,
                Fate::Recovered => {
                    expected.unknown += 1;
                    expected.recovered += 1;
                }
                Fate::Vanished => expected.unknown += 1,
                Fate::Refused => expected.failed += 1,
            }
        }
        expected
    }

    /// The clean history of this plan.
    pub fn history(&self) -> Vec<Event> {
        let mut builder = Builder::new(self.partitions);
        builder.produce_all(&self.ops);
        builder.consume_all(&self.consumptions);
        builder.finish()
    }
}

/// Builds a history while keeping the model's logs.
struct Builder {
    partitions: Partition,
    events: Vec<Event>,
    logs: Vec<Vec<String>>,
    clock: u64,
}

impl Builder {
    fn new(partitions: Partition) -> Self {
        let run = Event::Run(Run {
            id: "P1".to_owned(),
            name: "generated".to_owned(),
            seed: 0,
            faults: vec!["kill_leader".to_owned()],
            require_leader_change: true,
            partitions,
            nodes: NODES.to_vec(),
            consumed_through: vec![],
            replicas: Default::default(),
            exactly_once_ids: false,
            idle_delivery_bound_ms: None,
        });
        Self {
            partitions,
            events: vec![run],
            logs: vec![Vec::new(); partitions as usize],
            clock: 0,
        }
    }

    fn produce_all(&mut self, ops: &[Op]) {
        let mut counters = [0u32; 4];
        for (index, op) in ops.iter().enumerate() {
            let value = format!("p{}-{}", op.process, counters[op.process as usize]);
            counters[op.process as usize] += 1;
            let partition = match op.key {
                Some(key) => Partition::from(key) % self.partitions,
                None => index as Partition % self.partitions,
            };
            self.produce(op, value, partition);
            if index == 1 {
                self.fail_over();
            }
        }
    }

    fn produce(&mut self, op: &Op, value: String, partition: Partition) {
        let stored = matches!(op.fate, Fate::Acked | Fate::Recovered);
        let log = &mut self.logs[partition as usize];
        let offset = log.len() as Offset;
        if stored {
            log.push(value.clone());
        }
        let acked = op.fate == Fate::Acked;
        let (outcome, status) = match op.fate {
            Fate::Acked => (Outcome::Ok, Some(200)),
            Fate::Recovered | Fate::Vanished => (Outcome::Info, None),
            Fate::Refused => (Outcome::Fail, Some(503)),
        };
        self.events.push(Event::Produce(Produce {
            process: op.process,
            value,
            key: op.key.map(|key| format!("k{key}")),
            partition: acked.then_some(partition),
            offset: acked.then_some(offset),
            node: 1,
            invoke_ms: self.clock,
            complete_ms: self.clock + op.took_ms,
            outcome,
            status,
            code: None,
            duplicate: false,
        }));
        self.clock += op.took_ms + 1;
    }

    /// One installed leader kill, and a new leader for every partition.
    fn fail_over(&mut self) {
        let at_ms = self.clock;
        let fault = |phase| {
            Event::Fault(Fault {
                name: "kill_leader".to_owned(),
                node: Some(1),
                at_ms,
                phase,
                installed: true,
            })
        };
        self.events.push(fault(Phase::Start));
        for partition in 0..self.partitions {
            let leader = |node, term, at_ms| {
                Event::Leader(Leader {
                    partition,
                    node,
                    term,
                    at_ms,
                })
            };
            self.events.push(leader(1, 1, 0));
            self.events.push(leader(2, 2, at_ms));
        }
        self.events.push(fault(Phase::End));
    }

    fn consume_all(&mut self, consumptions: &[Consumption]) {
        let stored: Vec<(Partition, Offset, String)> = (0..self.partitions)
            .flat_map(|p| {
                self.logs[p as usize]
                    .iter()
                    .enumerate()
                    .map(move |(o, v)| (p, o as Offset, v.clone()))
            })
            .collect();
        for ((partition, offset, value), consumption) in stored.into_iter().zip(consumptions) {
            self.consume(partition, offset, &value, *consumption);
        }
    }

    fn consume(
        &mut self,
        partition: Partition,
        offset: Offset,
        value: &str,
        consumption: Consumption,
    ) {
        let first_ack = match consumption {
            Consumption::Unread => return,
            Consumption::Acked => Outcome::Ok,
            Consumption::AckTimedOut => Outcome::Info,
            Consumption::AckRefused => Outcome::Fail,
            Consumption::LeaseExpired => {
                self.deliver(partition, offset, value, 1);
                self.clock += 30;
                self.deliver(partition, offset, value, 2);
                self.ack(value, Outcome::Ok, 2);
                return;
            }
        };
        self.deliver(partition, offset, value, 1);
        self.ack(
            value,
            first_ack,
            if first_ack == Outcome::Info { 100 } else { 2 },
        );
        if first_ack != Outcome::Ok {
            self.deliver(partition, offset, value, 2);
            self.ack(value, Outcome::Ok, 2);
        }
    }

    fn deliver(&mut self, partition: Partition, offset: Offset, value: &str, attempt: u32) {
        self.events.push(Event::Deliver(Deliver {
            process: 10,
            subscription: "s".to_owned(),
            value: value.to_owned(),
            partition,
            offset,
            attempt,
            received_ms: self.clock,
            receive_invoke_ms: None,
            node: 2,
        }));
        self.clock += 1;
    }

    fn ack(&mut self, value: &str, outcome: Outcome, took_ms: u64) {
        self.events.push(Event::Ack(Ack {
            process: 10,
            subscription: "s".to_owned(),
            value: value.to_owned(),
            invoke_ms: self.clock,
            complete_ms: self.clock + took_ms,
            outcome,
            status: None,
            code: None,
        }));
        self.clock += took_ms + 1;
    }

    fn finish(mut self) -> Vec<Event> {
        for node in NODES {
            for (partition, log) in (0..).zip(&self.logs) {
                for (offset, value) in (0..).zip(log) {
                    self.events.push(Event::Drain(Drain {
                        node,
                        partition,
                        offset,
                        value: value.clone(),
                        key: None,
                    }));
                }
                self.events.push(Event::Drained(Drained {
                    node,
                    partition,
                    records: log.len() as u64,
                }));
            }
        }
        self.events
    }
}
