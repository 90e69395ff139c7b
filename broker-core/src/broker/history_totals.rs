//! The cumulative totals of every open topic and subscription on this node, read without a
//! lock on the produce or receive path, for the per-minute history the gateway samples.

use super::Broker;
use crate::sync::read;
use crate::telemetry::{SubscriptionTotals, TopicTotals};

/// One topic's totals and its subscriptions', as this node counted them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicHistoryTotals {
    /// The topic's name.
    pub name: String,
    /// Its totals.
    pub totals: TopicTotals,
    /// Each subscription's name and totals, in name order.
    pub subscriptions: Vec<(String, SubscriptionTotals)>,
}

impl Broker {
    /// Every open topic's totals, in name order (a topic being deleted and the server's own
    /// topics, [`crate::names::is_internal`], are left out).
    pub fn history_totals(&self) -> Vec<TopicHistoryTotals> {
        let topics: Vec<_> = read(&self.topics)
            .iter()
            .filter(|(name, _)| !crate::names::is_internal(name))
            .map(|(_, topic)| topic.clone())
            .collect();
        topics
            .iter()
            .filter(|topic| !topic.deleted.load(std::sync::atomic::Ordering::SeqCst))
            .map(|topic| TopicHistoryTotals {
                name: topic.config().name,
                totals: topic.counters.totals(),
                subscriptions: read(&topic.subscriptions)
                    .iter()
                    .map(|(name, sub)| (name.clone(), sub.counters.totals()))
                    .collect(),
            })
            .collect()
    }
}
