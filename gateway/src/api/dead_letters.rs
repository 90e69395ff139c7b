//! Dead letters' wire types: a redrive and its reply.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How much to redrive; an empty body redrives everything at the default pace.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedriveRequest {
    /// At most this many dead letters (at least 1); `null`: all of them.
    #[schema(minimum = 1, maximum = 9223372036854775807_u64)]
    pub max_messages: Option<u64>,
    /// At most this many a second (at least 1; default 1000), so consumers that just
    /// recovered are not swamped.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub messages_per_second: Option<u32>,
}

/// The reply to a redrive.
#[derive(Debug, Serialize, ToSchema)]
pub struct RedriveResponse {
    /// Dead letters moved back into the topic by this call.
    pub redriven: u64,
}
