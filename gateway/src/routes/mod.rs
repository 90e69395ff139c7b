//! HTTP handlers, one file per resource, and the path parameters they share.

pub mod consume;
pub mod dead_letters;
pub mod delays;
pub mod docs;
pub mod health;
pub mod metrics;
pub mod partitions;
pub mod produce;
pub mod seek;
pub mod stream;
pub mod subscriptions;
pub mod topics;

use serde::Deserialize;
use utoipa::IntoParams;

/// Path of a topic.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TopicPath {
    /// Topic name.
    pub topic: String,
}

/// Path of a subscription.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SubscriptionPath {
    /// Topic name.
    pub topic: String,
    /// Subscription name.
    pub sub: String,
}

/// Path of a partition.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PartitionPath {
    /// Topic name.
    pub topic: String,
    /// Partition number, from 0.
    pub partition: u32,
}
