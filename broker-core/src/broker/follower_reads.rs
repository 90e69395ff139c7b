//! Offset reads served by a follower (as Kafka's KIP-392): a node holding a replica of a
//! partition answers its offset reads itself, as leader or as an in-sync follower, and a
//! follower that is not in sync sends them to the leader.
//!
//! A follower serves only what it applied, and it applies only committed entries: a read
//! never shows an uncommitted record, and its `end_offset` is the follower's committed end.
//! It is in sync when it heard the leader within [`FOLLOWER_READ_MAX_LAG_MS`] and applied
//! the commit the leader told it then (waiting up to [`FOLLOWER_APPLY_WAIT_MS`] for that):
//! what it lacks was committed within that bound (see [`crate::raft::LeaderContact`]).
//! An offset past the follower's end goes to the leader too, which may have it (only the
//! leader answers `offset_out_of_range`).

use std::time::Duration;

use super::{Broker, Topic};
use crate::error::{BrokerError, Result};
use crate::raft::{FOLLOWER_APPLY_WAIT_MS, FOLLOWER_READ_MAX_LAG_MS, LeaderView};

/// Who serves an offset read on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reader {
    /// The partition's only copy (a single node) or its leader: everything applied here.
    Leader,
    /// An in-sync follower of the leader it names.
    Follower {
        /// The leader this follower knows (none during an election).
        leader: Option<u64>,
    },
}

impl Reader {
    /// [`BrokerError::NotLeader`] for a read of `what` this follower leaves to the leader.
    pub(super) fn to_leader(self, what: String) -> Result<()> {
        match self {
            Reader::Leader => Ok(()),
            Reader::Follower { leader } => Err(BrokerError::NotLeader { what, leader }),
        }
    }
}

impl Broker {
    /// Whether this node serves an offset read of `topic`'s partition `partition`, which it
    /// holds (or is a single node): as its leader, as an in-sync follower, or not at all
    /// ([`BrokerError::NotLeader`] naming the leader).
    pub(super) async fn offset_reader(&self, topic: &Topic, partition: u32) -> Result<Reader> {
        let Some(replication) = &self.replication else {
            return Ok(Reader::Leader);
        };
        let Some(seat) = topic.groups.get(partition as usize) else {
            return Ok(Reader::Leader);
        };
        let Some(seated) = seat.seated() else {
            return Ok(Reader::Leader);
        };
        let view = LeaderView::of(&seated.raft, seated.opened);
        if view.leader == Some(replication.node_id) {
            return Ok(Reader::Leader);
        }
        let behind = || BrokerError::NotLeader {
            what: format!(
                "partition {partition} of topic '{}' (this follower is not in sync: more \
                 than {FOLLOWER_READ_MAX_LAG_MS} ms behind its leader)",
                topic.config().name
            ),
            leader: view.leader,
        };
        let heard = seat.contact().last().ok_or_else(behind)?;
        if heard.ago > Duration::from_millis(FOLLOWER_READ_MAX_LAG_MS) {
            return Err(behind());
        }
        seated
            .raft
            .wait(Some(Duration::from_millis(FOLLOWER_APPLY_WAIT_MS)))
            .applied_index_at_least(heard.commit, "a follower read")
            .await
            .map_err(|_| behind())?;
        Ok(Reader::Follower {
            leader: view.leader,
        })
    }
}
