//! The types openraft is configured with, and how a Raft entry maps onto a frame.
//!
//! A partition's entries are its frames: `Normal` entries carry an [`EntryBody`] (messages or
//! control entries); Raft's own entries are a meta frame whose bytes start with a tag:
//! [`META_BLANK`] for a new leader's blank entry, [`META_MEMBERSHIP`] then the membership as
//! JSON.

use bytes::Bytes;
use openraft::{Entry, EntryPayload, LogId, Membership};
use serde::{Deserialize, Serialize};

use crate::error::{BrokerError, Result};
use crate::storage::{BatchHeader, BatchKind, EntryBody, RaftEntry};

openraft::declare_raft_types!(
    /// Wharf's Raft types: node ids are `u64`, a node is its [`NodeInfo`], an entry's data
    /// is an [`EntryBody`], applying one answers [`Applied`].
    pub TypeConfig:
        D = EntryBody,
        R = Applied,
        NodeId = u64,
        Node = NodeInfo,
        Entry = Entry<TypeConfig>,
        SnapshotData = std::io::Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// What the cluster knows of a node besides its id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Its cluster port, `IP:port`.
    pub cluster_addr: String,
    /// Its zone.
    pub zone: String,
}

/// Where an applied entry's messages landed: none for control and Raft's own entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Offset of the entry's first message (of a control entry: of the next message).
    pub base_offset: u64,
    /// Messages the entry holds.
    pub count: u32,
}

/// Tag of a new leader's blank entry.
pub const META_BLANK: u8 = 0;
/// Tag of a membership entry.
pub const META_MEMBERSHIP: u8 = 1;

/// An openraft entry as what the partition log appends.
pub(crate) fn to_raft_entry(entry: &Entry<TypeConfig>, now_ms: u64) -> Result<RaftEntry> {
    let body = match &entry.payload {
        EntryPayload::Normal(body) => body.clone(),
        EntryPayload::Blank => EntryBody::meta(now_ms, &Bytes::from_static(&[META_BLANK]))?,
        EntryPayload::Membership(membership) => {
            let mut bytes = vec![META_MEMBERSHIP];
            serde_json::to_writer(&mut bytes, membership)
                .map_err(|e| BrokerError::invalid("membership", e.to_string()))?;
            EntryBody::meta(now_ms, &Bytes::from(bytes))?
        }
    };
    Ok(RaftEntry {
        term: entry.log_id.leader_id.term,
        index: entry.log_id.index,
        body,
    })
}

/// A frame read back from the partition log as the openraft entry it was.
pub(crate) fn from_frame(header: &BatchHeader, body: EntryBody) -> Result<Entry<TypeConfig>> {
    let index = header
        .raft_index
        .ok_or_else(|| not_an_entry("no Raft index"))?;
    let log_id = log_id(header.leader_epoch, index);
    let payload = match header.kind {
        BatchKind::Messages | BatchKind::Control => EntryPayload::Normal(body),
        BatchKind::Meta => {
            let bytes = body
                .meta_bytes()
                .ok_or_else(|| not_an_entry("bad meta body"))?;
            match bytes.split_first() {
                Some((&META_BLANK, [])) => EntryPayload::Blank,
                Some((&META_MEMBERSHIP, json)) => {
                    let membership: Membership<u64, NodeInfo> = serde_json::from_slice(json)
                        .map_err(|e| not_an_entry(&format!("bad membership: {e}")))?;
                    EntryPayload::Membership(membership)
                }
                _ => return Err(not_an_entry("unknown meta tag")),
            }
        }
    };
    Ok(Entry { log_id, payload })
}

/// The metadata of the `built`-th snapshot a replica builds, of state applied up to
/// `applied` with `membership`: its id names the term, index and count, so two snapshots of
/// one point differ.
pub(crate) fn snapshot_meta(
    applied: Option<LogId<u64>>,
    membership: &openraft::StoredMembership<u64, NodeInfo>,
    built: u64,
) -> openraft::SnapshotMeta<u64, NodeInfo> {
    let snapshot_id = match applied {
        Some(id) => format!("{}-{}-{built}", id.leader_id.term, id.index),
        None => format!("none-{built}"),
    };
    openraft::SnapshotMeta {
        last_log_id: applied,
        last_membership: membership.clone(),
        snapshot_id,
    }
}

/// The log id of entry `index` of term `term`.
pub(crate) fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(openraft::CommittedLeaderId::new(term, 0), index)
}

fn not_an_entry(reason: &str) -> BrokerError {
    BrokerError::invalid("raft entry", reason.to_owned())
}
