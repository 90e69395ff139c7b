//! Who produced a batch, as the message trace shows it: the token's principal, the client's
//! address and the node that took the request from the client. Stored with the messages
//! (see [`broker_core::Origin`]) and never shown to consumers.
//!
//! A produce forwarded by another node of the cluster keeps its principal (the token travels
//! with it). `Wharf-Forwarded: <node>` is believed only when the connection comes from that
//! node's own public address (a client cannot claim to be a node it does not run on); then
//! the origin names that node, and its client address is unknown here (no header between
//! nodes is trusted to carry it), so none is stored rather than the forwarding node's. Any
//! other produce names this node and the client address of [`client_address`].

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use broker_core::Origin;

use crate::app::AppState;
use crate::auth::Principal;
use crate::client_addr::client_address;
use crate::forward::FORWARDED_HEADER;

/// The origin of the produce being handled: an extractor over the principal the edge
/// established, the connection's peer and the request headers.
#[derive(Debug, Clone)]
pub struct ProducedBy(pub Arc<Origin>);

impl FromRequestParts<AppState> for ProducedBy {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let principal = parts.extensions.get::<Principal>();
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        Ok(ProducedBy(produce_origin(
            state,
            principal,
            peer,
            &parts.headers,
        )))
    }
}

/// The origin of a produce made by `principal` over a connection from `peer`.
pub fn produce_origin(
    state: &AppState,
    principal: Option<&Principal>,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Arc<Origin> {
    let principal = principal
        .filter(|p| !p.anonymous)
        .map(|p| p.subject.clone());
    let Some(cluster) = &state.cluster else {
        let trusted = &state.edge.settings.trusted_proxies;
        let address = peer.map(|peer| client_address(peer, headers, trusted));
        return Arc::new(Origin {
            principal,
            address,
            node: None,
        });
    };
    let forwarded_by = headers
        .get(FORWARDED_HEADER)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok())
        .filter(|node| {
            let public = cluster.public_addr(*node);
            let node_ip = public.and_then(|addr| addr.parse::<SocketAddr>().ok());
            node_ip.is_some_and(|addr| Some(addr.ip()) == peer)
        });
    let (address, node) = match forwarded_by {
        Some(node) => (None, Some(node)),
        None => {
            let trusted = &state.edge.settings.trusted_proxies;
            let address = peer.map(|peer| client_address(peer, headers, trusted));
            (address, Some(cluster.node_id()))
        }
    };
    Arc::new(Origin {
        principal,
        address,
        node,
    })
}
