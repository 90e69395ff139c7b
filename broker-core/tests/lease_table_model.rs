//! The lease table against a simple model, over random sequences of grants, acks, nacks,
//! extends, appends (some of delayed messages appended ahead of their due time), time passing,
//! dead-letter moves and restarts (a save and a restore through the store's change list), for
//! plain, filtered and key-ordered subscriptions.

use std::collections::{BTreeMap, HashMap};

use broker_core::subscription::config::RetryPolicy;
use broker_core::subscription::lease_table::{Candidate, Cursor, Entry, LeaseTable, TablePolicy};
use proptest::prelude::*;

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

/// A store as sled would hold it: the cursor and the entries, updated from change lists.
#[derive(Default)]
struct FakeStore {
    cursor: Option<Cursor>,
    entries: BTreeMap<u64, Entry>,
}

impl FakeStore {
    fn save(&mut self, table: &mut LeaseTable) {
        let (cursor, entries) = table.take_changes();
        if let Some(cursor) = cursor {
            self.cursor = Some(cursor);
        }
        for (offset, entry) in entries {
            match entry {
                Some(entry) => self.entries.insert(offset, entry),
                None => self.entries.remove(&offset),
            };
        }
    }

    fn restore(&self, policy: TablePolicy) -> LeaseTable {
        let cursor = self.cursor.expect("saved at least once");
        LeaseTable::restore(
            cursor,
            self.entries.iter().map(|(o, e)| (*o, *e)).collect(),
            policy,
        )
    }
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        initial_backoff_ms: 100,
        max_backoff_ms: 1_000,
        multiplier: 2.0,
    }
}

struct Run {
    policy: TablePolicy,
    filtered: bool,
    table: LeaseTable,
    store: FakeStore,
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
            store,
            model: HashMap::new(),
            end: 0,
            now: 1_000,
            next_lease: 0,
            not_before: HashMap::new(),
        }
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
            let m = self.model.entry(offset).or_default();
            m.settled = true;
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
                let m = r.model.entry(offset).or_default();
                if valid {
                    match op {
                        Op::Ack(_) => {
                            m.settled = true;
                            m.lease = None;
                        }
                        Op::Nack(..) => m.lease = None,
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
                }
            }
            Op::Advance(ms) => r.now += ms,
            Op::MoveDeadLetters => r.settle_dead_letters(),
            Op::Restart => {
                r.store.save(&mut r.table);
                r.table = r.store.restore(policy);
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

fn plain(offsets: std::ops::Range<u64>) -> Vec<Candidate> {
    offsets
        .map(|offset| Candidate {
            offset,
            key_hash: None,
            wanted: true,
            not_before_ms: 0,
        })
        .collect()
}

#[test]
fn an_expired_lease_comes_back_after_its_backoff_with_the_next_attempt() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let first = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 7);
    assert_eq!(first[0].attempt, 1);
    assert!(
        table
            .grant(1_099, 1, 0, &[], 1_000, &retry, || 8)
            .is_empty(),
        "redelivered before lease + backoff"
    );
    let second = table.grant(1_100, 1, 0, &[], 1_000, &retry, || 8);
    assert_eq!((second[0].offset, second[0].attempt), (0, 2));
    assert!(
        table.ack(0, 7, 1_101).is_err(),
        "the first delivery's lease must not ack the second"
    );
    assert!(table.ack(0, 8, 1_101).is_ok());
}

#[test]
fn a_released_grant_is_not_counted_as_an_attempt() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let grant = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 1)[0];
    table.release(grant.offset, grant.lease, 1);
    let again = table.grant(2, 1, 0, &[], 1_000, &retry, || 2);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(table.cursor().redelivered, 0);
}

#[test]
fn offsets_removed_by_retention_are_skipped() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    assert_eq!(
        table
            .grant(0, 5, 0, &plain(0..10), 1_000, &retry, rand::random)
            .len(),
        5
    );
    let later = table.grant(1, 10, 8, &plain(8..10), 1_000, &retry, rand::random);
    let offsets: Vec<u64> = later.iter().map(|g| g.offset).collect();
    assert_eq!(offsets, vec![8, 9]);
    assert_eq!(table.cursor().ack_floor, 8);
}

#[test]
fn the_unacked_window_is_bounded() {
    let retry = retry();
    let limit = broker_core::limits::MAX_UNACKED_PER_PARTITION;
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let end = limit as u64 + 10;
    let granted = table.grant(
        0,
        limit + 10,
        0,
        &plain(0..end),
        1_000,
        &retry,
        rand::random,
    );
    assert_eq!(granted.len(), limit, "granted past the unacked window");
    table
        .ack(granted[0].offset, granted[0].lease, 1)
        .expect("ack");
    let next = table.next_offset();
    assert_eq!(
        table
            .grant(1, 10, 0, &plain(next..end), 1_000, &retry, rand::random)
            .len(),
        1
    );
}

#[test]
fn the_last_failed_delivery_becomes_a_dead_letter_not_a_retry() {
    let retry = retry();
    let policy = TablePolicy {
        ordered_by_key: false,
        max_deliveries: 2,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let first = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 1)[0];
    table.nack(0, first.lease, 10, None, &retry).expect("nack");
    assert!(table.dead_letters().is_empty());
    let second = table.grant(110, 1, 0, &[], 1_000, &retry, || 2)[0];
    assert_eq!(second.attempt, 2);
    table
        .nack(0, second.lease, 120, Some(0), &retry)
        .expect("nack");
    assert_eq!(table.dead_letters(), vec![(0, 2)]);
    assert!(
        table
            .grant(100_000, 1, 0, &[], 1_000, &retry, || 3)
            .is_empty(),
        "a dead letter was redelivered"
    );
    table.finish_dead_letter(0, 100_001);
    assert_eq!(table.cursor().dead_lettered, 1);
    assert_eq!(table.cursor().ack_floor, 1);
}

#[test]
fn an_ordered_key_waits_for_its_predecessor_while_other_keys_flow() {
    let retry = retry();
    let policy = TablePolicy {
        ordered_by_key: true,
        max_deliveries: 10,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let fresh: Vec<Candidate> = [(0, 1), (1, 1), (2, 2)]
        .into_iter()
        .map(|(offset, key)| Candidate {
            offset,
            key_hash: Some(key),
            wanted: true,
            not_before_ms: 0,
        })
        .collect();
    let grants = table.grant(0, 10, 0, &fresh, 1_000, &retry, rand::random);
    let offsets: Vec<u64> = grants.iter().map(|g| g.offset).collect();
    assert_eq!(
        offsets,
        vec![0, 2],
        "offset 1 shares key 1 with offset 0 and must wait"
    );
    table.ack(0, grants[0].lease, 1).expect("ack");
    let next = table.grant(2, 10, 0, &[], 1_000, &retry, rand::random);
    assert_eq!(next.iter().map(|g| g.offset).collect::<Vec<_>>(), vec![1]);
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
