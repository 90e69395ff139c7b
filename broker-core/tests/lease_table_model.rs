//! The lease table against a simple model, over random sequences of grants, acks, nacks,
//! extends, appends, time passing and restarts (a save and a restore through the store's
//! change list).

use std::collections::{BTreeMap, HashMap};

use broker_core::subscription::config::RetryPolicy;
use broker_core::subscription::lease_table::{Cursor, Entry, LeaseTable};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append(u64),
    Grant { max: usize, lease_ms: u64 },
    Ack(usize),
    Nack(usize, Option<u64>),
    Extend(usize, u64),
    AckStale(usize),
    Advance(u64),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u64..20).prop_map(Op::Append),
        (1usize..8, 1u64..3_000).prop_map(|(max, lease_ms)| Op::Grant { max, lease_ms }),
        any::<usize>().prop_map(Op::Ack),
        (any::<usize>(), proptest::option::of(0u64..2_000)).prop_map(|(i, d)| Op::Nack(i, d)),
        (any::<usize>(), 1u64..3_000).prop_map(|(i, ms)| Op::Extend(i, ms)),
        any::<usize>().prop_map(Op::AckStale),
        (0u64..4_000).prop_map(Op::Advance),
        Just(Op::Restart),
    ]
}

/// What the model knows of one offset.
#[derive(Debug, Clone, Copy, Default)]
struct Model {
    acked: bool,
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

    fn restore(&self) -> LeaseTable {
        let cursor = self.cursor.expect("saved at least once");
        LeaseTable::restore(cursor, self.entries.iter().map(|(o, e)| (*o, *e)).collect())
    }
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        initial_backoff_ms: 100,
        max_backoff_ms: 1_000,
        multiplier: 2.0,
    }
}

fn run(ops: Vec<Op>) {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0);
    table.mark_cursor_dirty();
    let mut store = FakeStore::default();
    store.save(&mut table);
    let mut model: HashMap<u64, Model> = HashMap::new();
    let mut end = 0u64;
    let mut now = 1_000u64;
    let mut next_lease = 0u64;
    let mut outstanding: Vec<(u64, u64)> = Vec::new();
    let mut stale: Vec<(u64, u64)> = Vec::new();
    for op in ops {
        match op {
            Op::Append(n) => end += n,
            Op::Grant { max, lease_ms } => {
                let grants = table.grant(now, max, 0..end, lease_ms, &retry, || {
                    next_lease += 1;
                    next_lease
                });
                assert!(grants.len() <= max);
                for grant in grants {
                    assert!(
                        grant.offset < end,
                        "granted {} past the end {end}",
                        grant.offset
                    );
                    let m = model.entry(grant.offset).or_default();
                    assert!(
                        !m.acked,
                        "offset {} granted again after its ack",
                        grant.offset
                    );
                    if let Some((_, deadline)) = m.lease {
                        assert!(
                            deadline <= now,
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
                    m.attempts = grant.attempt;
                    m.lease = Some((grant.lease, now + lease_ms));
                    outstanding.push((grant.offset, grant.lease));
                }
            }
            Op::Ack(i) | Op::Nack(i, _) | Op::Extend(i, _) if !outstanding.is_empty() => {
                let (offset, lease) = outstanding.remove(i % outstanding.len());
                let m = model.entry(offset).or_default();
                let valid = m
                    .lease
                    .is_some_and(|(held, deadline)| held == lease && deadline > now);
                let result = match op {
                    Op::Ack(_) => table.ack(offset, lease, now),
                    Op::Nack(_, delay) => table.nack(offset, lease, now, delay, &retry),
                    Op::Extend(_, ms) => table.extend(offset, lease, now, ms),
                    _ => unreachable!(),
                };
                assert_eq!(result.is_ok(), valid, "{op:?} on offset {offset}");
                if valid {
                    match op {
                        Op::Ack(_) => {
                            m.acked = true;
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
                let m = model.entry(offset).or_default();
                let valid = m
                    .lease
                    .is_some_and(|(held, deadline)| held == lease && deadline > now);
                assert_eq!(table.ack(offset, lease, now).is_ok(), valid);
                if valid {
                    m.acked = true;
                    m.lease = None;
                }
            }
            Op::Advance(ms) => now += ms,
            Op::Restart => {
                store.save(&mut table);
                table = store.restore();
            }
            _ => {}
        }
        store.save(&mut table);
        let cursor = table.cursor();
        assert!(
            cursor.ack_floor <= cursor.next_offset
                && cursor.next_offset <= end.max(cursor.next_offset)
        );
        for offset in 0..cursor.ack_floor {
            assert!(
                model.get(&offset).is_some_and(|m| m.acked),
                "floor passed unacked {offset}"
            );
        }
        let acked = model.values().filter(|m| m.acked).count() as u64;
        assert_eq!(cursor.acked, acked, "acked counter");
    }
    // Liveness: with time moving on and everything acked as it comes, every offset is done.
    for _ in 0..10_000 {
        if table.cursor().ack_floor == end {
            break;
        }
        now += 10_000;
        let grants = table.grant(now, 100, 0..end, 1_000, &retry, || {
            next_lease += 1;
            next_lease
        });
        for grant in grants {
            table
                .ack(grant.offset, grant.lease, now)
                .expect("a fresh lease acks");
        }
    }
    assert_eq!(
        table.cursor().ack_floor,
        end,
        "not every message was delivered and acked"
    );
    assert_eq!(
        table.next_wake(),
        None,
        "timers left after everything was acked"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn lease_table_matches_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops);
    }
}

#[test]
fn an_expired_lease_comes_back_after_its_backoff_with_the_next_attempt() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0);
    let first = table.grant(0, 1, 0..1, 1_000, &retry, || 7);
    assert_eq!(first[0].attempt, 1);
    assert!(
        table.grant(1_099, 1, 0..1, 1_000, &retry, || 8).is_empty(),
        "redelivered before lease + backoff"
    );
    let second = table.grant(1_100, 1, 0..1, 1_000, &retry, || 8);
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
    let mut table = LeaseTable::starting_at(0);
    let grant = table.grant(0, 1, 0..1, 1_000, &retry, || 1)[0];
    table.release(grant.offset, grant.lease, 1);
    let again = table.grant(2, 1, 0..1, 1_000, &retry, || 2);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(table.cursor().redelivered, 0);
}

#[test]
fn offsets_removed_by_retention_are_skipped() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0);
    let grants = table.grant(0, 5, 0..10, 1_000, &retry, rand_lease);
    assert_eq!(grants.len(), 5);
    let later = table.grant(1, 10, 8..10, 1_000, &retry, rand_lease);
    let offsets: Vec<u64> = later.iter().map(|g| g.offset).collect();
    assert_eq!(offsets, vec![8, 9]);
    assert_eq!(table.cursor().ack_floor, 8);
}

#[test]
fn the_unacked_window_is_bounded() {
    let retry = retry();
    let limit = broker_core::limits::MAX_UNACKED_PER_PARTITION;
    let mut table = LeaseTable::starting_at(0);
    let end = limit as u64 + 10;
    let granted = table.grant(0, limit + 10, 0..end, 1_000, &retry, rand_lease);
    assert_eq!(granted.len(), limit, "granted past the unacked window");
    table
        .ack(granted[0].offset, granted[0].lease, 1)
        .expect("ack");
    assert_eq!(
        table.grant(1, 10, 0..end, 1_000, &retry, rand_lease).len(),
        1
    );
}

fn rand_lease() -> u64 {
    rand::random()
}
