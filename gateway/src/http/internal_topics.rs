//! The server's own topics ([`broker_core::names::is_internal`]: names starting with `__`,
//! such as the synthetic probe's) are not part of the API. The broker leaves them out of
//! listings and history; [`hide`] answers every request whose path names one
//! (`/v1/topics/__…`) 404 `topic_not_found`, as for a topic that does not exist, so none can
//! be read, produced to, changed or deleted over HTTP.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use broker_core::BrokerError;
use broker_core::names::is_internal;

use crate::auth::policy::segments;
use crate::http::problem::ApiError;

/// Refuses a request naming an internal topic in its path (after the edge, so auth and
/// rate limits answer first, as for any topic).
pub(crate) async fn hide(request: Request, next: Next) -> Response {
    let path = segments(request.uri().path());
    if let [v1, topics, topic, ..] = path.as_slice()
        && v1 == "v1"
        && topics == "topics"
        && is_internal(topic)
    {
        return ApiError::from(BrokerError::TopicNotFound {
            topic: topic.clone(),
        })
        .into_response();
    }
    next.run(request).await
}
