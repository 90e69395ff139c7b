//! Who produced a batch, as the message trace shows it: the token's principal, the client's
//! address and the node that took the request from the client. Stored with the messages
//! (see [`broker_core::Origin`]) and never shown to consumers.
//!
//! A produce forwarded by another node of the cluster (`Wharf-Forwarded`) keeps its principal
//! (the token travels with it) and names the forwarding node, but its client address is
//! unknown here: the TCP peer is the forwarding node, and no header between nodes is trusted
//! to carry the client's address, so none is stored rather than a wrong one.

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::HeaderMap;
use broker_core::Origin;

use crate::app::AppState;
use crate::auth::Principal;
use crate::client_addr::client_address;
use crate::forward::FORWARDED_HEADER;

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
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
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
