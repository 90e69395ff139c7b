//! Retention in a cluster: a replicated partition's old segments are its Raft log's prefix,
//! so deleting them is openraft's purge, and a purge needs a snapshot covering what it
//! deletes (a follower too far behind installs that snapshot instead of the missing entries).
//! Each replica purges its own log: a purge is local to a replica in Raft.
//!
//! openraft 0.9: `trigger().snapshot()` builds a snapshot at the last applied entry (see
//! [`super::PartitionMachine`]); `trigger().purge_log(upto)` purges up to `upto`, never past
//! the snapshot (it stops at the snapshot's last entry), and on a leader only once no
//! replication stream still reads the entries; the group's settings make sure nothing else
//! purges (`max_in_snapshot_log_to_keep`).

use std::time::Duration;

use openraft::Raft;

use super::types::TypeConfig;
use crate::error::{BrokerError, Result};

/// Longest retention waits for a snapshot it asked for: building one replays at most about a
/// checkpoint interval of the log, so this is ample; retention tries again next round.
pub const SNAPSHOT_WAIT_MS: u64 = 10_000;

/// Makes `raft` purge its log up to entry `upto`: builds a snapshot first unless the latest
/// covers `upto`, waiting up to [`SNAPSHOT_WAIT_MS`], then asks for the purge (which
/// openraft does in the background). Returns the index the purge asked for: `upto`, or less
/// when the snapshot ends before it.
pub async fn purge_through_snapshot(raft: &Raft<TypeConfig>, upto: u64) -> Result<u64> {
    let covered = |m: &openraft::RaftMetrics<u64, super::NodeInfo>| {
        m.snapshot.is_some_and(|s| s.index >= upto)
    };
    let snapshot = if covered(&raft.metrics().borrow()) {
        raft.metrics().borrow().snapshot
    } else {
        let before = raft.metrics().borrow().snapshot;
        raft.trigger()
            .snapshot()
            .await
            .map_err(|e| BrokerError::invalid("raft snapshot", e.to_string()))?;
        let wait = raft.wait(Some(Duration::from_millis(SNAPSHOT_WAIT_MS)));
        match wait
            .metrics(
                |m| covered(m) || m.snapshot > before,
                "a snapshot for retention",
            )
            .await
        {
            Ok(metrics) => metrics.snapshot,
            Err(_) => {
                return Err(BrokerError::ReplicationTimeout {
                    what: "a snapshot for retention".into(),
                    ms: SNAPSHOT_WAIT_MS,
                });
            }
        }
    };
    let Some(snapshot) = snapshot else {
        return Ok(0);
    };
    let upto = upto.min(snapshot.index);
    raft.trigger()
        .purge_log(upto)
        .await
        .map_err(|e| BrokerError::invalid("raft purge", e.to_string()))?;
    Ok(upto)
}
