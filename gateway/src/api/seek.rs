//! Seek's wire types: where to move a subscription, and where it now stands.

use std::collections::BTreeMap;

use broker_core::broker::SeekTarget;
use broker_core::limits::{MAX_INT64_SETTING, check_range};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::present;
use crate::http::problem::ApiError;

/// An end of the log to seek to.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeekEnd {
    /// The oldest stored message of every partition: replay everything.
    Earliest,
    /// The end of every partition: skip the backlog.
    Latest,
}

/// Where to move the subscription: exactly one of `to`, `timestamp_ms` and `offsets` (a
/// second one, even `null`, is refused).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(max_properties = 1)]
pub struct SeekRequest {
    /// `earliest` or `latest`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = SeekEnd)]
    pub to: Option<Option<SeekEnd>>,
    /// The first message of every partition published at or after this Unix epoch
    /// millisecond.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = u64, maximum = 9223372036854775807_u64)]
    pub timestamp_ms: Option<Option<u64>>,
    /// Offsets by partition number (`{"0": 42}`), for the partitions named only; each
    /// within the partition's stored range (`start_offset..=end_offset`).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = BTreeMap<String, u64>)]
    pub offsets: Option<Option<BTreeMap<String, u64>>>,
}

/// Where the subscription now stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeekResponse {
    /// The next offset to deliver, by partition number, for every partition moved.
    pub positions: BTreeMap<String, u64>,
}

impl SeekRequest {
    /// The one target the request names.
    pub(crate) fn target(self) -> Result<SeekTarget, ApiError> {
        match (self.to, self.timestamp_ms, self.offsets) {
            (Some(Some(SeekEnd::Earliest)), None, None) => Ok(SeekTarget::Earliest),
            (Some(Some(SeekEnd::Latest)), None, None) => Ok(SeekTarget::Latest),
            (None, Some(Some(at)), None) => Ok(SeekTarget::Timestamp(check_range(
                "timestamp_ms",
                at,
                0,
                MAX_INT64_SETTING,
            )?)),
            (None, None, Some(Some(offsets))) => offsets_target(offsets),
            (Some(None), None, None) | (None, Some(None), None) | (None, None, Some(None)) => {
                Err(ApiError::invalid("the seek target may not be null"))
            }
            _ => Err(ApiError::invalid(
                "give exactly one of to, timestamp_ms and offsets",
            )),
        }
    }
}

fn offsets_target(offsets: BTreeMap<String, u64>) -> Result<SeekTarget, ApiError> {
    if offsets.is_empty() {
        return Err(ApiError::invalid("offsets: name at least one partition"));
    }
    offsets
        .into_iter()
        .map(|(partition, offset)| {
            let number = partition.parse::<u32>().map_err(|_| {
                ApiError::invalid(format!("offsets: {partition:?} is not a partition number"))
            })?;
            Ok((number, offset))
        })
        .collect::<Result<_, _>>()
        .map(SeekTarget::Offsets)
}
