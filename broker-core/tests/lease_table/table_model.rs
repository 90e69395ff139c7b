//! The lease table against a simple model, over random sequences of grants, acks, nacks,
//! extends, appends (some of delayed messages appended ahead of their due time), time passing,
//! dead-letter moves, restarts (a save and a restore through the store's change list), replayed
//! acks, nacks and dead letters (some past the cursor), and crashes: a restore of the last
//! checkpoint followed by a replay of every ack, nack, delivery and dead letter since, with the
//! leases of the lost deliveries gone. For plain, filtered and key-ordered subscriptions.

use std::collections::HashMap;

use broker_core::subscription::lease_table::{Candidate, LeaseTable, TablePolicy};
use proptest::prelude::*;

use crate::support::{Event, FakeStore, retry};

#[derive(Debug, Clone)]
enum Op {
    Append(u64),
    /// Delayed messages in the log before they are due, due this many ms from now.
    AppendDelayed(u64, u64),
    Grant {
        max: usize,
        lease_ms: u64,
    },
    Ack(usize),
    Nack(usize, Option<u64>),
    Extend(usize, u64),
    AckStale(usize),
    Advance(u64),
    MoveDeadLetters,
    Restart,
    /// An ack of any offset of the log arrives by replay, whatever its state.
    ReplayAck(u64),
    /// A dead letter of any offset of the log arrives by replay.
    ReplayDeadLettered(u64),
    /// A nack of an outstanding delivery arrives by replay (without its lease).
    ReplayNack(usize, u64),
    /// The checkpointer persists the table; the replay log starts afresh.
    Checkpoint,
    /// The process dies: the last checkpoint is restored and the events since replayed.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u64..20).prop_map(Op::Append),
        (1u64..5, 0u64..3_000).prop_map(|(n, ms)| Op::AppendDelayed(n, ms)),
        (1usize..8, 1u64..3_000).prop_map(|(max, lease_ms)| Op::Grant { max, lease_ms }),
        any::<usize>().prop_map(Op::Ack),
        (any::<usize>(), proptest::option::of(0u64..2_000)).prop_map(|(i, d)| Op::Nack(i, d)),
        (any::<usize>(), 1u64..3_000).prop_map(|(i, ms)| Op::Extend(i, ms)),
        any::<usize>().prop_map(Op::AckStale),
        (0u64..4_000).prop_map(Op::Advance),
        Just(Op::MoveDeadLetters),
        Just(Op::Restart),
        any::<u64>().prop_map(Op::ReplayAck),
        any::<u64>().prop_map(Op::ReplayDeadLettered),
        (any::<usize>(), 0u64..2_000).prop_map(|(i, ms)| Op::ReplayNack(i, ms)),
        Just(Op::Checkpoint),
        Just(Op::Crash),
    ]
}

/// The log the table hands out: offset `o` has key `o % 4` (none for multiples of 5), and the
/// filter wants it unless `o % 7 == 3` when the subscription filters.
fn candidate(offset: u64, filtered: bool) -> Candidate {
    Candidate {
        offset,
        key_hash: (!offset.is_multiple_of(5)).then_some(offset % 4),
        wanted: !(filtered && offset % 7 == 3),
        not_before_ms: 0,
    }
}

/// What the model knows of one offset.
#[derive(Debug, Clone, Copy, Default)]
struct Model {
    settled: bool,
    attempts: u32,
    /// The lease currently held, with its deadline.
    lease: Option<(u64, u64)>,
}

struct Run {
    policy: TablePolicy,
    filtered: bool,
    table: LeaseTable,
    store: FakeStore,
    /// The store as of the last checkpoint, and the events recorded since.
    checkpoint: FakeStore,
    events: Vec<Event>,
    model: HashMap<u64, Model>,
    end: u64,
    now: u64,
    next_lease: u64,
    /// Due times of the delayed messages among the offsets.
    not_before: HashMap<u64, u64>,
}

impl Run {
    fn new(policy: TablePolicy, filtered: bool) -> Run {
        let mut table = LeaseTable::starting_at(0, policy);
        table.mark_cursor_dirty();
        let mut store = FakeStore::default();
        store.save(&mut table);
        Run {
            policy,
            filtered,
            table,
            checkpoint: store.clone(),
            store,
            events: Vec::new(),
            model: HashMap::new(),
            end: 0,
            now: 1_000,
            next_lease: 0,
            not_before: HashMap::new(),
        }
    }

    fn key_hash(&self, offset: u64) -> Option<u64> {
        candidate(offset, self.filtered).key_hash
    }

    fn fresh(&self, max: usize) -> Vec<Candidate> {
        (self.table.next_offset()..self.end)
            .take(max)
            .map(|o| Candidate {
                not_before_ms: self.not_before.get(&o).copied().unwrap_or(0),
                ..candidate(o, self.filtered)
            })
            .collect()
    }
    fn grant(&mut self, max: usize, lease_ms: u64) -> Vec<(u64, u64)> {
        let fresh = self.fresh(max);
        let next_lease = &mut self.next_lease;
        let grants = self
            .table
            .grant(self.now, max, 0, &fresh, lease_ms, &retry(), || {
                *next_lease += 1;
                *next_lease
            });
        assert!(grants.len() <= max);
        let mut granted = Vec::new();
        for grant in grants {
            let c = candidate(grant.offset, self.filtered);
            assert!(
                grant.offset < self.end,
                "granted {} past the end {}",
                grant.offset,
                self.end
            );
            assert!(
                c.wanted,
                "offset {} granted though the filter skips it",
                grant.offset
            );
            let due = self.not_before.get(&grant.offset).copied().unwrap_or(0);
            assert!(
                due <= self.now,
                "offset {} delivered at {} before it was due at {due}",
                grant.offset,
                self.now
            );
            let m = *self.model.entry(grant.offset).or_default();
            assert!(
                !m.settled,
                "offset {} granted again after it was settled",
                grant.offset
            );
            if let Some((_, deadline)) = m.lease {
                assert!(
                    deadline <= self.now,
                    "offset {} granted while leased",
                    grant.offset
                );
            }
            assert_eq!(
                grant.attempt,
                m.attempts + 1,
                "attempts of offset {}",
                grant.offset
            );
            assert!(
                grant.attempt <= self.policy.max_deliveries,
                "offset {} delivered past max_deliveries",
                grant.offset
            );
            if self.policy.ordered_by_key
                && let Some(key) = c.key_hash
            {
                for earlier in 0..grant.offset {
                    let e = candidate(earlier, self.filtered);
                    if e.wanted && e.key_hash == Some(key) {
                        let em = self.model.get(&earlier).copied().unwrap_or_default();
                        assert!(
                            em.settled,
                            "offset {} of key {key} delivered before earlier {earlier} settled",
                            grant.offset
                        );
                    }
                }
            }
            let m = self.model.entry(grant.offset).or_default();
            m.attempts = grant.attempt;
            m.lease = Some((grant.lease, self.now + lease_ms));
            granted.push((grant.offset, grant.lease));
            self.events.push(Event::Attempt {
                offset: grant.offset,
                attempts: grant.attempt,
                key_hash: c.key_hash,
            });
        }
        granted
    }

    fn settle_dead_letters(&mut self) {
        for (offset, attempts) in self.table.dead_letters() {
            assert_eq!(
                attempts, self.policy.max_deliveries,
                "dead letter {offset} before its last delivery"
            );
            self.table.finish_dead_letter(offset, self.now);
            self.events.push(Event::DeadLettered(offset));
            let m = self.model.entry(offset).or_default();
            m.settled = true;
            m.lease = None;
        }
    }

    /// An event arrives by replay on the live table (a duplicate the log held, say).
    fn replay(&mut self, event: Event) {
        event.replay(&mut self.table);
        self.events.push(event);
    }

    /// Restores the last checkpoint and replays every event since; the leases of deliveries
    /// are lost.
    fn crash(&mut self) {
        self.store = self.checkpoint.clone();
        self.table = self.store.restore(self.policy);
        for event in &self.events {
            event.replay(&mut self.table);
        }
        for m in self.model.values_mut() {
            m.lease = None;
        }
    }

    fn check(&mut self) {
        self.store.save(&mut self.table);
        let cursor = self.table.cursor();
        assert!(cursor.ack_floor <= cursor.next_offset);
        for offset in 0..cursor.ack_floor {
            let settled = self.model.get(&offset).is_some_and(|m| m.settled)
                || !candidate(offset, self.filtered).wanted;
            assert!(settled, "floor passed unsettled {offset}");
        }
        let acked_or_dead = self.model.values().filter(|m| m.settled).count() as u64;
        assert_eq!(
            cursor.acked + cursor.dead_lettered,
            acked_or_dead,
            "settled counters"
        );
        let attempts: u64 = self.model.values().map(|m| u64::from(m.attempts)).sum();
        let again: u64 = self
            .model
            .values()
            .map(|m| u64::from(m.attempts.saturating_sub(1)))
            .sum();
        assert_eq!(
            (cursor.delivered, cursor.redelivered),
            (attempts, again),
            "delivery counters"
        );
        let counts = self.table.counts(self.now, self.end);
        assert_eq!(
            counts.undelivered
                + counts.in_flight
                + counts.waiting_retry
                + counts.not_yet_due
                + counts.dead_lettering,
            self.end - cursor.acked - cursor.filtered - cursor.dead_lettered,
            "every message of the log is settled or counted once as unsettled: {counts:?}"
        );
        let window_ranges = self
            .table
            .settled()
            .iter()
            .filter(|(start, _)| *start < cursor.next_offset)
            .count();
        assert!(
            window_ranges <= self.table.unacked() + 1,
            "{window_ranges} settled ranges in the window around {} unacked messages",
            self.table.unacked()
        );
    }
}

fn run(ops: Vec<Op>, policy: TablePolicy, filtered: bool) {
    let retry = retry();
    let mut r = Run::new(policy, filtered);
    let mut outstanding: Vec<(u64, u64)> = Vec::new();
    let mut stale: Vec<(u64, u64)> = Vec::new();
    for op in ops {
        match op {
            Op::Append(n) => r.end += n,
            Op::AppendDelayed(n, ms) => {
                for offset in r.end..r.end + n {
                    r.not_before.insert(offset, r.now + ms);
                }
                r.end += n;
            }
            Op::Grant { max, lease_ms } => outstanding.extend(r.grant(max, lease_ms)),
            Op::Ack(i) | Op::Nack(i, _) | Op::Extend(i, _) if !outstanding.is_empty() => {
                let (offset, lease) = outstanding.remove(i % outstanding.len());
                let now = r.now;
                let m = r.model.entry(offset).or_default();
                let valid = m
                    .lease
                    .is_some_and(|(held, deadline)| held == lease && deadline > now);
                let result = match op {
                    Op::Ack(_) => r.table.ack(offset, lease, now),
                    Op::Nack(_, delay) => r.table.nack(offset, lease, now, delay, &retry),
                    Op::Extend(_, ms) => r.table.extend(offset, lease, now, ms),
                    _ => unreachable!(),
                };
                assert_eq!(result.is_ok(), valid, "{op:?} on offset {offset}");
                let key_hash = r.key_hash(offset);
                let m = r.model.entry(offset).or_default();
                if valid {
                    match op {
                        Op::Ack(_) => {
                            m.settled = true;
                            m.lease = None;
                            r.events.push(Event::Ack(offset));
                        }
                        Op::Nack(_, delay) => {
                            m.lease = None;
                            let pause = delay.unwrap_or_else(|| retry.backoff_ms(m.attempts));
                            r.events.push(Event::Nack {
                                offset,
                                attempts: m.attempts,
                                due_ms: now + pause,
                                key_hash,
                            });
                        }
                        Op::Extend(_, ms) => {
                            m.lease = Some((lease, now + ms));
                            outstanding.push((offset, lease));
                        }
                        _ => unreachable!(),
                    }
                }
                stale.push((offset, lease));
            }
            Op::AckStale(i) if !stale.is_empty() => {
                let (offset, lease) = stale[i % stale.len()];
                let now = r.now;
                let m = r.model.entry(offset).or_default();
                let valid = m
                    .lease
                    .is_some_and(|(held, deadline)| held == lease && deadline > now);
                assert_eq!(r.table.ack(offset, lease, now).is_ok(), valid);
                if valid {
                    m.settled = true;
                    m.lease = None;
                    r.events.push(Event::Ack(offset));
                }
            }
            Op::Advance(ms) => r.now += ms,
            Op::MoveDeadLetters => r.settle_dead_letters(),
            Op::Restart => {
                r.store.save(&mut r.table);
                r.table = r.store.restore(policy);
            }
            Op::ReplayAck(x) | Op::ReplayDeadLettered(x) if r.end > 0 => {
                let offset = x % r.end;
                // A message the filter skips is never delivered, so never acked.
                if candidate(offset, filtered).wanted {
                    let m = r.model.entry(offset).or_default();
                    m.settled = true;
                    m.lease = None;
                    r.replay(match op {
                        Op::ReplayAck(_) => Event::Ack(offset),
                        _ => Event::DeadLettered(offset),
                    });
                }
            }
            Op::ReplayNack(i, ms) if !outstanding.is_empty() => {
                let (offset, lease) = outstanding.remove(i % outstanding.len());
                let key_hash = r.key_hash(offset);
                let m = r.model.entry(offset).or_default();
                m.lease = None;
                let nack = Event::Nack {
                    offset,
                    attempts: m.attempts,
                    due_ms: r.now + ms,
                    key_hash,
                };
                r.replay(nack);
                stale.push((offset, lease));
            }
            Op::Checkpoint => {
                r.store.save(&mut r.table);
                r.checkpoint = r.store.clone();
                r.events.clear();
            }
            Op::Crash => {
                r.crash();
                outstanding.clear();
                stale.clear();
            }
            _ => {}
        }
        r.check();
    }
    // Liveness: with time moving on, everything acked as it comes and dead letters moved,
    // every offset is settled.
    for _ in 0..10_000 {
        if r.table.cursor().ack_floor == r.end {
            break;
        }
        r.now += 10_000;
        let now = r.now;
        for (offset, lease) in r.grant(100, 1_000) {
            r.table.ack(offset, lease, now).expect("a fresh lease acks");
            r.model.entry(offset).or_default().settled = true;
            r.events.push(Event::Ack(offset));
        }
        r.settle_dead_letters();
        r.check();
    }
    assert_eq!(
        r.table.cursor().ack_floor,
        r.end,
        "not every message was settled"
    );
    assert_eq!(
        r.table.next_wake(),
        None,
        "timers left after everything was settled"
    );
}

fn policies() -> impl Strategy<Value = (TablePolicy, bool)> {
    (any::<bool>(), 1u32..5, any::<bool>()).prop_map(
        |(ordered_by_key, max_deliveries, filtered)| {
            (
                TablePolicy {
                    ordered_by_key,
                    max_deliveries,
                },
                filtered,
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn lease_table_matches_the_model(
        (policy, filtered) in policies(),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        run(ops, policy, filtered);
    }
}

#[test]
fn regression_extend_stale_ack_restart() {
    let policy = TablePolicy {
        ordered_by_key: false,
        max_deliveries: 1,
    };
    run(
        vec![
            Op::Append(2),
            Op::Grant {
                max: 2,
                lease_ms: 1,
            },
            Op::Extend(8277312299566060004, 1),
            Op::Extend(1227423108541946204, 1),
            Op::AckStale(6259262902569525029),
            Op::Append(1),
            Op::Restart,
        ],
        policy,
        false,
    );
}
