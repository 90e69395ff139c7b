//! Subscription hot paths: receipt encode and verify (`ReceiptCodec`), and lease bookkeeping
//! (`LeaseTable` grant + ack cycles of a receive's worth of messages).

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::time::Duration;

use broker_core::subscription::lease_table::{Candidate, TablePolicy};
use broker_core::subscription::{LeaseTable, ReceiptCodec, ReceiptData, RetryPolicy};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn receipts(c: &mut Criterion) {
    let codec = ReceiptCodec::new([7; 32]);
    let data = ReceiptData {
        subscription_uid: 42,
        partition: 3,
        offset: 1_234_567,
        lease: 0x0123_4567_89ab_cdef,
    };
    let receipt = codec.encode(data);
    let mut group = c.benchmark_group("receipt");
    group.throughput(Throughput::Elements(1));
    group.bench_function("encode", |b| b.iter(|| codec.encode(black_box(data))));
    group.bench_function("verify", |b| {
        b.iter(|| codec.decode(black_box(&receipt)).expect("valid"))
    });
    group.finish();
}

fn leases(c: &mut Criterion) {
    let retry = RetryPolicy::default();
    let mut group = c.benchmark_group("lease_table");
    for batch in [10usize, 100] {
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(format!("grant_then_ack_{batch}"), |b| {
            let mut table = LeaseTable::starting_at(0, TablePolicy::default());
            let mut lease = 0u64;
            let now = 1_700_000_000_000;
            b.iter(|| {
                let next = table.cursor().next_offset;
                let fresh: Vec<Candidate> = (next..next + batch as u64)
                    .map(|offset| Candidate {
                        offset,
                        key_hash: None,
                        wanted: true,
                        not_before_ms: 0,
                    })
                    .collect();
                let grants = table.grant(now, batch, 0, &fresh, 30_000, &retry, || {
                    lease += 1;
                    lease
                });
                for grant in &grants {
                    table.ack(grant.offset, grant.lease, now).expect("leased");
                }
                black_box(table.take_changes())
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20);
    targets = receipts, leases
}
criterion_main!(benches);
