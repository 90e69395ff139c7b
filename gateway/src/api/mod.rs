//! The API's wire types: request bodies, path and query parameters, response bodies, as the
//! OpenAPI document names them; handlers in `routes` and the cluster fan-out in `fanout` both
//! use them.

pub mod alerts;
pub mod cluster;
pub mod cluster_admin;
pub mod console;
pub mod consume;
pub mod dead_letters;
pub mod delays;
pub mod health;
pub mod partitions;
pub mod produce;
pub mod seek;
pub mod stats;
pub mod stream;
pub mod subscriptions;
pub mod topics;
pub mod trace;

use broker_core::limits::MAX_TAG_LEN;
use serde::{Deserialize, Deserializer};
use utoipa::IntoParams;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

/// The schema of one message tag, as `broker_core::tags::validate` checks it: 1 to
/// [`MAX_TAG_LEN`] characters of `A-Z a-z 0-9 . _ - : /`. Documentation only; tags travel as
/// plain strings.
pub struct Tag;

/// [`Tag`]'s alphabet.
pub const TAG_PATTERN: &str = "^[A-Za-z0-9._:/-]+$";

impl utoipa::PartialSchema for Tag {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_TAG_LEN))
            .pattern(Some(TAG_PATTERN))
            .into()
    }
}

impl utoipa::ToSchema for Tag {}

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

/// Tells a field sent as `null` (`Some(None)`) apart from a field left out (`None`); use with
/// `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}
