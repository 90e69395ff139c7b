//! Dropping a replica moved off this node: once the partition's group committed a
//! configuration without this node, its Raft here stops, its seat empties (the partition's
//! requests are then refused naming its leader, as for any partition held elsewhere) and its
//! files are deleted, leaving the empty log every node keeps for a partition it does not
//! hold, and what the broker derived from the log (the subscription tables, the delay
//! schedule's share, the dedup ids of the partition) starts afresh, as after a snapshot that
//! carries nothing (`partition_state`). A later move back seats a fresh replica, which its
//! leader fills again, and the tables replay it from its start: kept, they would count the
//! refilled history a second time.
//!
//! Safety: nothing is deleted while the controller metadata still places a replica here, nor
//! before the partition's leader answers that its committed, non-joint configuration has
//! neither this node as voter nor as learner ([`MembershipStep::Released`]): until then a
//! rolled-back move could still need this replica. This node stops answering the group's
//! RPCs before it asks, so a leader that adds it back meanwhile finds no replica here and
//! counts nothing as copied to the files about to go.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::carried::CarriedTables;
use super::partition_state::{Replaced, replace_partition_state};
use super::{Broker, Topic, blocking};
use crate::error::{BrokerError, Result};
use crate::raft::{
    GroupId, MembershipStep, PartitionGroup, Replication, SNAPSHOT_FILE, Seated, change_members,
};
use crate::storage::{PartitionHandle, RaftState};
use crate::sync::read;

/// The next message offset of a dropped replica's emptied log: that of a node that never
/// held the partition. A replica moved back is filled from the leader's first entry on, or
/// by a snapshot, which moves its start.
const EMPTY_LOG_START: u64 = 0;

/// Longest this node waits for the leader's answer on whether its replica is released: it
/// answers from its metrics at once, and meanwhile this replica answers no RPC of its group
/// (a node still a voter would be missing from it for that long; asked again later).
const RELEASED_ASK_MS: u64 = 2_000;

impl Broker {
    /// Drops this node's replica of partition `partition` of topic `name` (incarnation
    /// `uid`) when the metadata no longer places it here and the partition's leader answers
    /// that the group's committed configuration left this node out. `Ok(true)`: dropped;
    /// `Ok(false)`: nothing to drop, or not yet (asked again later).
    pub async fn release_replica(&self, name: &str, uid: u64, partition: u32) -> Result<bool> {
        let Some(replication) = self.replication.clone() else {
            return Ok(false);
        };
        let me = replication.node_id;
        let Some(moved) = self.moved_away(name, uid, partition, me) else {
            return Ok(false);
        };
        let MovedAway {
            topic,
            seat,
            seated,
            leader,
        } = moved;
        let group = GroupId::Partition {
            topic: name.to_owned(),
            partition,
        };
        replication.groups.remove(&group);
        let asked = ask_released(&replication, me, leader, &group).await;
        let _admin = self.admin.lock().await;
        let still_seated = seat.seated().is_some_and(|now| Arc::ptr_eq(&now, &seated));
        let placed_here = seat.replicas().contains(&me);
        if let Err(error) = asked.as_ref()
            && still_seated
        {
            tracing::debug!(%group, leader, %error, "a replica moved away is not released yet");
        }
        if asked.is_err() || placed_here || !still_seated || topic.deleted.load(Ordering::SeqCst) {
            if still_seated {
                replication
                    .groups
                    .insert_followed(group, seated.raft.clone(), Arc::clone(&seat));
            }
            return Ok(false);
        }
        seat.unseat();
        if let Err(e) = seated.raft.shutdown().await {
            tracing::warn!(error = %e, %group, "a released group did not stop cleanly");
        }
        let Some(log) = topic.partitions.get(partition as usize).cloned() else {
            return Ok(false);
        };
        self.empty_replica(&topic, partition, log).await?;
        tracing::info!(%group, "dropped a replica moved off this node");
        Ok(true)
    }

    /// This node's replica of partition `partition` of topic `name` (incarnation `uid`) if it
    /// is seated but the metadata places it elsewhere, with the leader to ask about it.
    fn moved_away(&self, name: &str, uid: u64, partition: u32, me: u64) -> Option<MovedAway> {
        let topic = read(&self.topics).get(name).cloned()?;
        if topic.config().uid != uid {
            return None;
        }
        let seat = topic.groups.get(partition as usize).cloned()?;
        let seated = seat.seated()?;
        if seat.replicas().contains(&me) || seat.replicas().is_empty() {
            return None;
        }
        // Ask the leader as this replica last knew it, else as the metadata records it; never
        // this node itself (a leader that removed itself steps down once that commits).
        let leader = seat
            .view()
            .and_then(|view| view.leader)
            .filter(|l| *l != me)
            .or_else(|| seat.hint().filter(|l| *l != me));
        Some(MovedAway {
            topic,
            seat,
            seated,
            leader: leader?,
        })
    }

    /// Empties a released replica's partition: the state derived from its log, its Raft
    /// state and snapshot, then its entries, with the background work held off meanwhile.
    async fn empty_replica(
        &self,
        topic: &Arc<Topic>,
        partition: u32,
        log: PartitionHandle,
    ) -> Result<()> {
        // No background work (the tables' applier, the checkpoints) runs until the log is
        // empty: it would derive the old log's state again meanwhile.
        let quiet = Arc::clone(&self.background).write_owned().await;
        // The derived state first, durably, then the vote and snapshot, then the entries: a
        // crash between two steps leaves entries behind fresh tables, which a restart replays
        // from the log's start (the replica restarts, is no member, and is dropped again);
        // the other orders could leave old tables over an empty log, which a move back would
        // refill under them, or a vote and a committed id past an empty log.
        let dropping = Arc::clone(topic);
        blocking(move || {
            let dropped = Replaced::Dropped {
                next_offset: EMPTY_LOG_START,
            };
            let nothing = CarriedTables::nothing();
            replace_partition_state(&dropping, partition as usize, &nothing, dropped).map(drop)
        })
        .await?;
        self.metadata.flush().await?;
        let dir = log.dir().to_path_buf();
        fail::fail_point!("cluster_release::derived_state_dropped", |_| {
            let stop = std::io::Error::other("stopped by a failpoint");
            Err(BrokerError::io(&dir, stop))
        });
        blocking(move || remove_replica_state(&dir)).await?;
        log.reset_entries(EMPTY_LOG_START).await?;
        drop(quiet);
        Ok(())
    }
}

/// A replica of this node that the metadata places elsewhere.
struct MovedAway {
    /// Its topic.
    topic: Arc<Topic>,
    /// The partition's seat on this node.
    seat: Arc<PartitionGroup>,
    /// The replica in the seat.
    seated: Arc<Seated>,
    /// The node to ask whether the group's configuration left this node out.
    leader: u64,
}

/// Asks `leader` whether the committed configuration of `group` left this node (`me`) out,
/// waiting at most [`RELEASED_ASK_MS`].
async fn ask_released(
    replication: &Replication,
    me: u64,
    leader: u64,
    group: &GroupId,
) -> Result<()> {
    let step = MembershipStep::Released { node: me };
    let ask = change_members(
        me,
        &replication.groups,
        replication.transport.as_ref(),
        leader,
        group,
        &step,
    );
    match tokio::time::timeout(Duration::from_millis(RELEASED_ASK_MS), ask).await {
        Ok(asked) => asked,
        Err(_) => Err(BrokerError::ReplicationTimeout {
            what: format!("{group}: whether this node's replica is released"),
            ms: RELEASED_ASK_MS,
        }),
    }
}

/// Deletes a replica's Raft state and kept snapshot from its partition directory `dir`,
/// durably. Blocking file I/O.
fn remove_replica_state(dir: &std::path::Path) -> Result<()> {
    for name in [SNAPSHOT_FILE.to_owned(), format!("{SNAPSHOT_FILE}.tmp")] {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BrokerError::io(&path, e)),
        }
    }
    // Syncs the directory, which makes the removals above durable too.
    RaftState::remove(dir)
}

impl Broker {
    /// The directory of partition `partition` of topic `name` on this node (every node keeps
    /// one per partition; it holds data only where a replica is seated).
    pub fn partition_dir(&self, name: &str, partition: u32) -> Option<std::path::PathBuf> {
        let topics = read(&self.topics);
        let log = topics.get(name)?.partitions.get(partition as usize)?;
        Some(log.dir().to_path_buf())
    }
}
