//! Delayed messages: cancelling one that is not yet due.

use axum::extract::State;
use axum::http::StatusCode;

use crate::api::delays::MessagePath;
use crate::app::AppState;
use crate::http::extract::PathParams;
use crate::http::problem::{ApiError, Problem};

/// Cancel a delayed message that is not yet due.
///
/// The message is removed from the topic's schedule and is never delivered. A delayed
/// message is appended to its partition up to 50 ms before it is due (held back from every
/// subscription and offset read until then), so that its delivery does not wait on the
/// append; from then on, or if no delayed message of that id exists, the answer is 404
/// `message_not_found`, and so a second cancel of the same id is 404.
///
/// ```text
/// curl -X DELETE localhost:8080/v1/topics/orders/messages/order-42
/// ```
#[utoipa::path(delete, path = "/v1/topics/{topic}/messages/{id}", tag = "messages",
    params(MessagePath),
    responses(
        (status = 204, description = "Cancelled: it will not be delivered"),
        (status = 400, description = "The id is not 1 to 200 printable ASCII characters without spaces or `/` (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`), or no delayed message of that id is still waiting (`message_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn cancel_delayed(
    State(state): State<AppState>,
    PathParams(path): PathParams<MessagePath>,
) -> Result<StatusCode, ApiError> {
    state.broker.cancel_delayed(&path.topic, &path.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
