//! Subscription administration and stats.

use std::sync::Arc;

use super::{Broker, SubscriptionInfo, SubscriptionStats, Topic, blocking};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::storage::PartitionHandle;
use crate::subscription::{StartPosition, Subscription, SubscriptionSpec};
use crate::sync::{read, write};

impl Broker {
    /// Creates a subscription starting at the end of every partition (`latest`) or at the
    /// oldest stored message (`earliest`).
    pub async fn create_subscription(
        &self,
        topic: &str,
        spec: SubscriptionSpec,
    ) -> Result<SubscriptionInfo> {
        self.refuse_in_cluster("subscriptions")?;
        self.check_running()?;
        let _admin = self.admin.lock().await;
        let open = self.topic(topic)?;
        let config = spec.into_config(topic, now_ms(), self.metadata.new_uid()?)?;
        if read(&open.subscriptions).contains_key(&config.name) {
            return Err(BrokerError::SubscriptionExists {
                topic: topic.to_owned(),
                subscription: config.name,
            });
        }
        let starts: Vec<u64> = open
            .partitions
            .iter()
            .map(|log| match config.start {
                StartPosition::Latest => log.end_offset(),
                StartPosition::Earliest => log.start_offset(),
            })
            .collect();
        let store = self.metadata.subscription_store(config.uid)?;
        let logs = open.partitions.clone();
        let opening = config.clone();
        let subscription = blocking(move || {
            let subscription = Subscription::open(opening, store, &starts, &logs, false)?;
            for (partition, log) in logs.iter().enumerate() {
                subscription.checkpoint(partition, log.end_position())?;
            }
            Ok(subscription)
        })
        .await?;
        self.metadata.save_subscription(&config)?;
        self.persist().await?;
        let subscription = Arc::new(subscription);
        write(&open.subscriptions).insert(config.name.clone(), subscription.clone());
        tracing::info!(topic, subscription = %config.name, "created subscription");
        self.subscription_info(&open, &subscription).await
    }

    /// Every subscription of a topic, in name order, with stats.
    pub async fn list_subscriptions(&self, topic: &str) -> Result<Vec<SubscriptionInfo>> {
        let open = self.topic(topic)?;
        let subscriptions: Vec<Arc<Subscription>> =
            read(&open.subscriptions).values().cloned().collect();
        let mut infos = Vec::with_capacity(subscriptions.len());
        for subscription in &subscriptions {
            infos.push(self.subscription_info(&open, subscription).await?);
        }
        Ok(infos)
    }

    /// One subscription's settings and stats.
    pub async fn describe_subscription(&self, topic: &str, name: &str) -> Result<SubscriptionInfo> {
        let open = self.topic(topic)?;
        let subscription = open.subscription(name)?;
        self.subscription_info(&open, &subscription).await
    }

    /// Deletes a subscription with its cursors and leases; its receipts stop working.
    pub async fn delete_subscription(&self, topic: &str, name: &str) -> Result<()> {
        self.check_running()?;
        let _admin = self.admin.lock().await;
        let open = self.topic(topic)?;
        let subscription = open.subscription(name)?;
        self.metadata.remove_subscription(&subscription.config)?;
        self.persist().await?;
        write(&open.subscriptions).remove(name);
        tracing::info!(topic, subscription = name, "deleted subscription");
        Ok(())
    }

    async fn subscription_info(
        &self,
        topic: &Topic,
        subscription: &Subscription,
    ) -> Result<SubscriptionInfo> {
        let now = now_ms();
        let mut stats = SubscriptionStats {
            delayed: topic.scheduled.load(std::sync::atomic::Ordering::SeqCst),
            ..SubscriptionStats::default()
        };
        for (partition, log) in topic.partitions.iter().enumerate() {
            let end = log.end_offset();
            let (counts, cursor) =
                subscription.inspect(partition, |t| (t.counts(now, end), t.cursor()));
            stats.in_flight += counts.in_flight;
            stats.waiting_retry += counts.waiting_retry;
            stats.delayed += counts.not_yet_due;
            stats.backlog += counts.undelivered
                + counts.in_flight
                + counts.waiting_retry
                + counts.dead_lettering;
            stats.delivered += cursor.delivered;
            stats.redelivered += cursor.redelivered;
            stats.acked += cursor.acked;
            stats.filtered += cursor.filtered;
            stats.dead_lettered += cursor.dead_lettered;
            stats.unacked_limit_reached_partitions += u64::from(counts.unacked_limit_reached);
            if let Some(offset) = counts.oldest_unacked {
                let age = publish_time(log, offset)
                    .await?
                    .map(|t| now.saturating_sub(t));
                stats.oldest_unacked_age_ms = stats.oldest_unacked_age_ms.max(age);
            }
        }
        Ok(SubscriptionInfo {
            config: subscription.config.clone(),
            stats,
        })
    }
}

async fn publish_time(log: &PartitionHandle, offset: u64) -> Result<Option<u64>> {
    let records = super::reads::read_range(log.clone(), offset, 1, 1).await?;
    Ok(records.first().map(|r| r.record.timestamp_ms))
}
