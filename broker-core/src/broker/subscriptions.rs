//! Subscription administration and stats.

use std::sync::Arc;

use super::live_tables::Lead;
use super::{
    Broker, FiguresOf, SubscriptionFigures, SubscriptionInfo, SubscriptionStats, Topic,
    TopicFigures, blocking,
};
use crate::clock::{now_ms, steady_ms};
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
        match crate::names::is_internal(topic) {
            true => tracing::debug!(topic, subscription = %config.name, "created subscription"),
            false => tracing::info!(topic, subscription = %config.name, "created subscription"),
        }
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
        let subscription = self.subscription_in(&open, name)?;
        self.subscription_info(&open, &subscription).await
    }

    /// Deletes a subscription with its cursors and leases; its receipts stop working.
    pub async fn delete_subscription(&self, topic: &str, name: &str) -> Result<()> {
        self.check_running()?;
        let _admin = self.admin.lock().await;
        let open = self.topic(topic)?;
        let subscription = self.subscription_in(&open, name)?;
        self.metadata.remove_subscription(&subscription.config)?;
        self.persist().await?;
        write(&open.subscriptions).remove(name);
        tracing::info!(topic, subscription = name, "deleted subscription");
        Ok(())
    }

    /// Per-partition figures of `topic`'s subscriptions (those of `of`): what a
    /// cluster node answers for the partitions it leads, and sums with the other leaders'
    /// (a non-leader's tables are not live). The tables of partitions served here are made
    /// live first, as a receive would. The schedule is walked once (blocking pool).
    pub async fn subscription_figures(
        &self,
        topic: &str,
        of: FiguresOf<'_>,
    ) -> Result<TopicFigures> {
        let open = self.topic(topic)?;
        let subscriptions: Vec<Arc<Subscription>> = match of {
            FiguresOf::One(name) => vec![self.subscription_in(&open, name)?],
            FiguresOf::All => read(&open.subscriptions).values().cloned().collect(),
            FiguresOf::Topic => Vec::new(),
        };
        let count = open.partitions.len();
        let mut served = vec![false; count];
        for (partition, serves) in served.iter_mut().enumerate() {
            *serves = matches!(self.lead(&open, partition), Lead::Single | Lead::Leader(_));
        }
        let now = steady_ms();
        let mut figures = Vec::with_capacity(subscriptions.len());
        for subscription in &subscriptions {
            let mut partitions = Vec::with_capacity(count);
            for (partition, serves) in served.iter_mut().enumerate() {
                // A table that cannot be made live now (leadership just moved) is not this
                // node's to report: the asking node keeps its own figures for it.
                if *serves
                    && !matches!(
                        self.serve_partition(&open, subscription, partition).await,
                        Ok(true)
                    )
                {
                    *serves = false;
                }
                partitions.push(partition_stats(&open, subscription, partition, now).await?);
            }
            figures.push(SubscriptionFigures {
                config: subscription.config.clone(),
                partitions,
            });
        }
        let delays = open.delays.clone();
        let delayed = blocking(move || delays.count_by_partition(count)).await?;
        Ok(TopicFigures {
            served,
            delayed,
            subscriptions: figures,
        })
    }

    async fn subscription_info(
        &self,
        topic: &Topic,
        subscription: &Subscription,
    ) -> Result<SubscriptionInfo> {
        let now = steady_ms();
        let mut stats = SubscriptionStats {
            delayed: topic.scheduled.load(std::sync::atomic::Ordering::SeqCst),
            ..SubscriptionStats::default()
        };
        for partition in 0..topic.partitions.len() {
            stats.add(&partition_stats(topic, subscription, partition, now).await?);
        }
        Ok(SubscriptionInfo {
            config: subscription.config.clone(),
            stats,
        })
    }
}

/// `subscription`'s figures on one partition as its table here shows them (`delayed`: only
/// the messages the table holds back).
async fn partition_stats(
    topic: &Topic,
    subscription: &Subscription,
    partition: usize,
    now: u64,
) -> Result<SubscriptionStats> {
    let log = &topic.partitions[partition];
    let end = log.end_offset();
    let (counts, cursor) = subscription.inspect(partition, |t| (t.counts(now, end), t.cursor()));
    let mut stats = SubscriptionStats {
        in_flight: counts.in_flight,
        waiting_retry: counts.waiting_retry,
        delayed: counts.not_yet_due,
        backlog: counts.undelivered
            + counts.in_flight
            + counts.waiting_retry
            + counts.dead_lettering,
        delivered: cursor.delivered,
        redelivered: cursor.redelivered,
        acked: cursor.acked,
        filtered: cursor.filtered,
        dead_lettered: cursor.dead_lettered,
        unacked_limit_reached_partitions: u64::from(counts.unacked_limit_reached),
        oldest_unacked_age_ms: None,
    };
    if let Some(offset) = counts.oldest_unacked {
        stats.oldest_unacked_age_ms = publish_time(log, offset)
            .await?
            .map(|t| now.saturating_sub(t));
    }
    Ok(stats)
}

async fn publish_time(log: &PartitionHandle, offset: u64) -> Result<Option<u64>> {
    let records = super::reads::read_range(log.clone(), offset, 1, 1).await?;
    Ok(records.first().map(|r| r.record.timestamp_ms))
}
