//! Producing: validate the whole batch, route each message to its partition, hand each
//! partition's share to its writer as one batch, answer in request order.

use futures_util::future::try_join_all;

use super::{AckMode, Broker, Durability, NewMessage, ProduceOutcome, Produced};
use crate::clock::now_ms;
use crate::config::FsyncPolicy;
use crate::error::{BrokerError, Result};
use crate::limits::{
    MAX_BATCH_MESSAGES, MAX_HEADER_BYTES, MAX_HEADERS, MAX_KEY_BYTES, MAX_TAG_LEN, MAX_TAGS,
};
use crate::message::Record;

impl Broker {
    /// Stores a batch of 1..=1000 messages. Every message is checked before any is written, so
    /// bad input changes nothing. With `AckMode::None` the reply comes once the batch is queued
    /// and carries no offsets. If one partition's writer refuses its share (overload) after
    /// another partition took its own, the error is returned and the taken share stays stored:
    /// producers retry, and consumers see such a message at least once.
    pub async fn produce(
        &self,
        topic: &str,
        messages: Vec<NewMessage>,
        ack: AckMode,
    ) -> Result<ProduceOutcome> {
        self.check_running()?;
        let open = self.topic(topic)?;
        let config = open.config();
        if messages.is_empty() || messages.len() > MAX_BATCH_MESSAGES {
            return Err(BrokerError::invalid(
                "messages",
                format!(
                    "a batch holds 1 to {MAX_BATCH_MESSAGES} messages, got {}",
                    messages.len()
                ),
            ));
        }
        for message in &messages {
            validate(message, config.max_message_bytes)?;
        }
        let timestamp_ms = now_ms();
        let partitions = open.partitions.len();
        let mut shares: Vec<Vec<Record>> = vec![Vec::new(); partitions];
        let mut placed = Vec::with_capacity(messages.len());
        for message in messages {
            let partition = open
                .partitioner
                .choose(message.key.as_deref(), config.partitions);
            let id = uuid::Uuid::now_v7().simple().to_string();
            let share = &mut shares[partition as usize];
            placed.push((id.clone(), partition, share.len() as u64));
            share.push(Record {
                id,
                timestamp_ms,
                key: message.key,
                value: message.value,
                binary: message.binary,
                headers: message.headers,
                tags: message.tags,
            });
        }
        let routed = (0u32..).zip(shares).filter(|(_, share)| !share.is_empty());
        if ack == AckMode::None {
            for (partition, share) in routed {
                open.partitions[partition as usize].append_detached(share)?;
            }
            let messages = placed
                .into_iter()
                .map(|(id, partition, _)| Produced {
                    id,
                    partition,
                    offset: None,
                })
                .collect();
            return Ok(ProduceOutcome {
                messages,
                durability: Durability::None,
            });
        }
        let appends = routed.map(|(partition, share)| {
            let log = open.partitions[partition as usize].clone();
            async move { log.append(share).await.map(|result| (partition, result)) }
        });
        let mut base_offsets = vec![0; partitions];
        let mut all_fsynced = true;
        for (partition, result) in try_join_all(appends).await? {
            base_offsets[partition as usize] = result.base_offset;
            all_fsynced &= result.fsynced;
        }
        let messages = placed
            .into_iter()
            .map(|(id, partition, index)| Produced {
                id,
                partition,
                offset: Some(base_offsets[partition as usize] + index),
            })
            .collect();
        let durability = if all_fsynced || self.config.log.fsync == FsyncPolicy::Always {
            Durability::LeaderFsynced
        } else {
            Durability::LeaderWritten
        };
        Ok(ProduceOutcome {
            messages,
            durability,
        })
    }
}

fn validate(message: &NewMessage, max_message_bytes: usize) -> Result<()> {
    if message.value.len() > max_message_bytes {
        return Err(BrokerError::MessageTooLarge {
            size: message.value.len(),
            limit: max_message_bytes,
        });
    }
    if let Some(key) = &message.key
        && (key.is_empty() || key.len() > MAX_KEY_BYTES)
    {
        return Err(BrokerError::invalid(
            "key",
            format!("must be 1 to {MAX_KEY_BYTES} bytes, got {}", key.len()),
        ));
    }
    let header_bytes: usize = message.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    if message.headers.len() > MAX_HEADERS || header_bytes > MAX_HEADER_BYTES {
        return Err(BrokerError::invalid(
            "headers",
            format!("at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes in all"),
        ));
    }
    if message.headers.iter().any(|(name, _)| name.is_empty()) {
        return Err(BrokerError::invalid("headers", "a header name is empty"));
    }
    if message.tags.len() > MAX_TAGS {
        return Err(BrokerError::invalid(
            "tags",
            format!("at most {MAX_TAGS} tags, got {}", message.tags.len()),
        ));
    }
    if let Some(bad) = message.tags.iter().find(|tag| !valid_tag(tag)) {
        return Err(BrokerError::invalid(
            "tags",
            format!("tag {bad:?} is not 1 to {MAX_TAG_LEN} characters of A-Z a-z 0-9 . _ - : /"),
        ));
    }
    Ok(())
}

fn valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/'))
}
