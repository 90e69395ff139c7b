//! Delayed messages' wire types: the path of one message of a topic.

use serde::Deserialize;
use utoipa::IntoParams;

/// Path of one message of a topic.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MessagePath {
    /// Topic name.
    pub topic: String,
    /// The message id from the produce reply (the client's `id` or `Idempotency-Key`, or the
    /// server-assigned one).
    #[param(min_length = 1, max_length = 200, pattern = r"^[!-.0-~]+$")]
    pub id: String,
}
