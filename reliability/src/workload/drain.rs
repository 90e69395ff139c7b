//! The drain: every partition of every node holding it read by offset, from 0 to its end,
//! each page served by that node itself (never a read it sent on to the leader).

use std::time::Instant;

use super::api::{LogRecord, Reply};
use super::spec::DRAIN_PAGE;
use super::{Context, RETRY_PAUSE, WorkloadError};
use crate::event::{Drain, Drained, Event, Partition};
use crate::harness::Endpoint;

/// Drains every node's every partition (only the nodes holding a replica of it, when the
/// spec lists them) within the spec's `drain_timeout`; returns the records read in all.
pub async fn all(context: &Context) -> Result<u64, WorkloadError> {
    let deadline = Instant::now() + context.spec.drain_timeout;
    let mut total = 0;
    for endpoint in &context.endpoints {
        for partition in 0..context.spec.partitions {
            let holds = context.spec.replicas.as_ref().is_none_or(|replicas| {
                replicas
                    .get(&partition)
                    .is_some_and(|nodes| nodes.contains(&endpoint.node))
            });
            if !holds {
                continue;
            }
            let records = partition_of(context, endpoint, partition, deadline).await?;
            total += record(context, endpoint, partition, records);
        }
    }
    Ok(total)
}

/// Writes the `drain` lines of one node's partition and its `drained` line.
fn record(
    context: &Context,
    endpoint: &Endpoint,
    partition: Partition,
    records: Vec<LogRecord>,
) -> u64 {
    let count = records.len() as u64;
    for record in records {
        context.recorder.record(&Event::Drain(Drain {
            node: endpoint.node,
            partition,
            offset: record.offset,
            value: record.value.unwrap_or_default(),
            key: record.key,
        }));
    }
    context.recorder.record(&Event::Drained(Drained {
        node: endpoint.node,
        partition,
        records: count,
    }));
    count
}

/// Reads one node's partition from offset 0 until `next_offset` reaches the end. Transient
/// replies are retried until `deadline`. A 404 (`topic_not_found`, `partition_not_found`) on the
/// first read means the node holds nothing of the partition: an empty log, which the checker
/// then judges (a node that lost its topic is per-node loss, not a harness failure).
async fn partition_of(
    context: &Context,
    endpoint: &Endpoint,
    partition: Partition,
    deadline: Instant,
) -> Result<Vec<LogRecord>, WorkloadError> {
    let failed = |detail: String| WorkloadError::Drain {
        node: endpoint.node,
        partition,
        detail,
    };
    let mut records = Vec::new();
    let mut offset = 0;
    loop {
        let reply = context
            .api
            .read_partition(
                &endpoint.url,
                &context.spec.topic,
                partition,
                offset,
                DRAIN_PAGE,
            )
            .await;
        match reply {
            // Another node's log is not this node's: wait until its replica is in sync and
            // serves the read itself.
            Reply::Ok(page)
                if page.served_by.is_some_and(|n| n != endpoint.node)
                    && Instant::now() < deadline =>
            {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Reply::Ok(page) if page.served_by.is_some_and(|n| n != endpoint.node) => {
                return Err(failed(format!(
                    "at offset {offset}: served by node {:?}, never by this node",
                    page.served_by
                )));
            }
            Reply::Ok(page) => {
                let next = page.next_offset;
                let progressed = next > offset || !page.messages.is_empty();
                records.extend(page.messages);
                if next >= page.end_offset {
                    return Ok(records);
                }
                if !progressed {
                    return Err(failed(format!(
                        "no progress at offset {offset} (end {})",
                        page.end_offset
                    )));
                }
                offset = next;
            }
            Reply::Status { status: 404, .. } if offset == 0 && records.is_empty() => {
                return Ok(Vec::new());
            }
            other if other.is_transient() && Instant::now() < deadline => {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            other => return Err(failed(format!("at offset {offset}: {other:?}"))),
        }
        if Instant::now() >= deadline {
            return Err(failed(format!("not finished in time, at offset {offset}")));
        }
    }
}
