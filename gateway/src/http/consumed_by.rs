//! Who consumes: the receiver of a receive or stream, the sender of an ack, nack or extend, as
//! the message trace shows each delivery and settle. The same fields, read by the same rules,
//! as a produce's origin ([`crate::http::produce_origin`]): the token's principal, the client's
//! address (behind a trusted proxy, the one it forwarded for), and in a cluster the node that
//! took the request from the client.
//!
//! A receive or settle that another node forwarded here (a gather's share, a whole request
//! sent to the partitions' leader) keeps its principal (the client's token travels with it),
//! names the forwarding node, and keeps the client's address from `Wharf-Client-Address`,
//! believed only with a believed `Wharf-Forwarded` ([`crate::http::produce_origin::cluster_origin`]).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use broker_core::Origin;

use crate::app::AppState;
use crate::http::produce_origin::ProducedBy;

/// The consumer of the request being handled: an extractor over the principal the edge
/// established, the connection's peer and the request headers.
#[derive(Debug, Clone)]
pub struct ConsumedBy(pub Arc<Origin>);

impl FromRequestParts<AppState> for ConsumedBy {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ProducedBy(origin) = ProducedBy::from_request_parts(parts, state).await?;
        Ok(ConsumedBy(origin))
    }
}
