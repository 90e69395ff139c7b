//! A topic's per-partition stats in a cluster whose replication factor is below the node
//! count: a node holding no replica of a partition has an empty log for it, so
//! `GET /v1/topics/{topic}` asks each such partition's leader for that partition's stats
//! (with the client's credentials and `Wharf-Forwarded`, one request per leader) and puts
//! them in its answer. A leader that cannot be asked leaves this node's own (empty) figures
//! for its partitions, with the leader named as this node knows it.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use serde::Deserialize;

use crate::api::topics::{PartitionStats, Topic};
use crate::app::AppState;
use crate::fanout::ask_leader::ask_leader;
use crate::fanout::forward::FORWARDED_HEADER;

#[derive(Deserialize)]
struct RemoteTopic {
    partition_stats: Vec<RemotePartition>,
}

#[derive(Deserialize)]
struct RemotePartition {
    partition: u32,
    start_offset: u64,
    end_offset: u64,
    bytes: u64,
}

/// Replaces the stats of the partitions of `topic` this node holds no replica of with their
/// leaders' (see the module docs); a forwarded request, or one on a single node, is left as
/// it is.
pub(crate) async fn fill_from_leaders(state: &AppState, headers: &HeaderMap, topic: &mut Topic) {
    let Some(cluster) = &state.cluster else {
        return;
    };
    if headers.contains_key(FORWARDED_HEADER) {
        return;
    }
    let mut by_leader: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for stats in &topic.partition_stats {
        if state.broker.holds_partition(&topic.name, stats.partition) {
            continue;
        }
        if let Some(leader) = state.broker.partition_leader(&topic.name, stats.partition) {
            by_leader.entry(leader).or_default().push(stats.partition);
        }
    }
    for (leader, partitions) in by_leader {
        let path = format!("/v1/topics/{}", topic.name);
        let asked = ask_leader::<RemoteTopic>(cluster, headers, None, leader, &path, "topic stats");
        let Some(remote) = asked.await else { continue };
        for remote in remote.partition_stats {
            if !partitions.contains(&remote.partition) {
                continue;
            }
            if let Some(stats) = topic.partition_stats.get_mut(remote.partition as usize) {
                *stats = PartitionStats {
                    partition: remote.partition,
                    start_offset: remote.start_offset,
                    end_offset: remote.end_offset,
                    bytes: remote.bytes,
                    leader: leader.to_string(),
                };
            }
        }
    }
}
