//! Which tests of an area's binary run their nodes at the same time. The tests of one binary
//! run in parallel threads (two on a 2-core machine), and two three-node clusters at once there
//! starve each other's elections and miss their timing bounds. A heavy test (a fault run, a
//! five-node cluster, a case timed to the second, one that ran alone in a binary of its own
//! before the areas were merged) holds [`CLUSTERS`] for writing: it runs alone. A light one (a
//! short check on idle nodes that ran beside its siblings before) holds it for reading: it may
//! run beside another light one, never beside a heavy one. The lock is tokio's, fair (a waiting
//! heavy test goes before light ones that come later), and unpoisoned (a failed test's guard is
//! dropped as it unwinds; the next one goes on).

use std::time::Instant;

use tokio::sync::RwLock;

/// The running tests' nodes: written by a heavy test, read by a light one.
pub static CLUSTERS: RwLock<()> = RwLock::const_new(());

/// Runs `test` on its own two-thread runtime while holding [`CLUSTERS`] for writing (alone),
/// and prints its wall time.
pub fn serially(test: impl Future<Output = ()>) {
    let _alone = CLUSTERS.blocking_write();
    let started = Instant::now();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(test);
    eprintln!("wall time {:.1} s", started.elapsed().as_secs_f64());
}
