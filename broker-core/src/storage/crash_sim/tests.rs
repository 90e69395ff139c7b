//! Simulator tests: what a power loss keeps of a segment's bytes and of its directory entry.

use super::*;
use crate::storage::segment::{Segment, sync_dir};

/// No tearing, no reordering, every undurable creation or removal undone.
const STRICT: Tearing = Tearing {
    torn: 0.0,
    garbage: 0.0,
    zeros: 0.0,
    out_of_order: 0.0,
    entry_lost: 1.0,
};

fn after_power_loss(disk: &SimulatedDisk, seed: u64, tearing: Tearing) -> PowerLoss {
    disk.power_loss_now(seed, tearing);
    let loss = disk.power_loss().expect("the power is cut");
    loss.apply().expect("apply");
    loss
}

#[test]
fn a_power_loss_keeps_what_was_fsynced_and_at_most_a_prefix_of_the_rest() {
    for seed in 0..20 {
        let dir = tempfile::tempdir().expect("temp dir");
        let disk = SimulatedDisk::watch(dir.path());
        let segment = Segment::create(dir.path(), 0).expect("create");
        segment.append(b"durable-").expect("append");
        segment.sync().expect("sync");
        segment.append(b"first-").expect("append");
        segment.append(b"second").expect("append");
        after_power_loss(&disk, seed, STRICT);
        let bytes = std::fs::read(segment.path()).expect("read");
        let kept = [&b"durable-"[..], b"durable-first-", b"durable-first-second"];
        assert!(kept.contains(&&bytes[..]), "seed {seed}: {bytes:?}");
    }
}

#[test]
fn every_change_fails_once_the_power_is_gone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = SimulatedDisk::watch(dir.path());
    let segment = Segment::create(dir.path(), 0).expect("create");
    disk.crash_after_write(1, 7, STRICT);
    segment.append(b"the last write").expect("append");
    assert!(disk.is_crashed());
    assert!(segment.append(b"more").is_err());
    assert!(segment.sync().is_err());
    assert!(Segment::create(dir.path(), 10).is_err());
    let loss = disk.power_loss().expect("the power is cut");
    assert_eq!(loss.unsynced_changes, 1);
}

#[test]
fn a_torn_write_leaves_a_strict_prefix_or_garbage_and_is_reported() {
    let tearing = Tearing {
        torn: 1.0,
        ..STRICT
    };
    let mut torn = 0;
    for seed in 0..20 {
        let dir = tempfile::tempdir().expect("temp dir");
        let disk = SimulatedDisk::watch(dir.path());
        let segment = Segment::create(dir.path(), 0).expect("create");
        segment.append(b"durable-").expect("append");
        segment.sync().expect("sync");
        segment.append(b"0123456789").expect("append");
        let loss = after_power_loss(&disk, seed, tearing);
        let bytes = std::fs::read(segment.path()).expect("read");
        assert!(bytes.starts_with(b"durable-"), "seed {seed}");
        if let Some(write) = loss.torn.first() {
            torn += 1;
            assert_eq!(write.at, 8);
            let cut_short = bytes.len() < 18 && b"durable-0123456789".starts_with(&bytes);
            assert!(
                write.tear != Tear::Prefix || cut_short,
                "seed {seed}: {bytes:?}"
            );
        }
    }
    assert!(torn > 0, "coverage: a write not kept whole is torn");
}

#[test]
fn a_creation_or_removal_without_a_directory_fsync_may_be_undone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = SimulatedDisk::watch(dir.path());
    let kept = Segment::create(dir.path(), 0).expect("create");
    kept.append(b"kept").expect("append");
    kept.sync().expect("sync");
    let path = dir.path().join(Segment::file_name(10));
    hooks::before(&path).expect("before");
    std::fs::write(&path, b"").expect("create undurably");
    hooks::created(&path);
    kept.remove_file().expect("remove");
    after_power_loss(&disk, 1, STRICT);
    assert!(!path.exists(), "the undurable creation is undone");
    assert_eq!(std::fs::read(kept.path()).expect("back"), b"kept");

    disk.revive();
    kept.remove_file().expect("remove");
    sync_dir(dir.path()).expect("sync dir");
    after_power_loss(&disk, 1, STRICT);
    assert!(
        !kept.path().exists(),
        "a removal the directory fsync covered stays"
    );
}
