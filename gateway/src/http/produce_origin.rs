//! Who produced a batch, as the message trace shows it: the token's principal, the client's
//! address and the node that took the request from the client. Stored with the messages
//! (see [`broker_core::Origin`]) and never shown to consumers.
//!
//! A produce forwarded by another node of the cluster keeps its principal (the token travels
//! with it and this node checks it again). `Wharf-Forwarded: <node>` is believed only when
//! the connection comes from that node's own public address (a client cannot claim to be a
//! node it does not run on); then the origin names that node, and the client's address is
//! the one that node put in `Wharf-Client-Address`
//! ([`crate::fanout::forward::CLIENT_ADDRESS_HEADER`], none if it is missing or not an address).
//! Any other produce names this node and the client address of [`client_address`]: a
//! `Wharf-Client-Address` a client sends itself is never read.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use broker_core::Origin;

use crate::app::AppState;
use crate::auth::Principal;
use crate::fanout::forward::{CLIENT_ADDRESS_HEADER, FORWARDED_HEADER};
use crate::http::client_addr::{IpRange, client_address};

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
pub(crate) fn produce_origin(
    state: &AppState,
    principal: Option<&Principal>,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Arc<Origin> {
    let principal = principal
        .filter(|p| !p.anonymous)
        .map(|p| p.subject.clone());
    let trusted = &state.edge.settings.trusted_proxies;
    let (address, node) = match &state.cluster {
        None => (
            peer.map(|peer| client_address(peer, headers, trusted)),
            None,
        ),
        Some(cluster) => {
            let public_ip = |node: u64| {
                let public = cluster.public_addr(node)?;
                public.parse::<SocketAddr>().ok().map(|addr| addr.ip())
            };
            let node = ThisNode {
                id: cluster.node_id(),
                public_ip: &public_ip,
            };
            cluster_origin(&node, peer, headers, trusted)
        }
    };
    Arc::new(Origin {
        principal,
        address,
        node,
    })
}

/// This cluster node, as [`cluster_origin`] needs it: its id and the public IP of any node
/// the cluster metadata knows.
pub(crate) struct ThisNode<'a> {
    /// This node's id.
    pub id: u64,
    /// A node's public IP, if the cluster metadata knows the node.
    pub public_ip: &'a dyn Fn(u64) -> Option<IpAddr>,
}

/// The client address and the node that took the request, for a produce on cluster node
/// `node` over a connection from `peer` (see the module docs for what is believed).
pub(crate) fn cluster_origin(
    node: &ThisNode<'_>,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &[IpRange],
) -> (Option<IpAddr>, Option<u64>) {
    let forwarded_by = headers
        .get(FORWARDED_HEADER)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok())
        .filter(|forwarder| peer.is_some() && (node.public_ip)(*forwarder) == peer);
    match forwarded_by {
        Some(forwarder) => {
            let address = headers
                .get(CLIENT_ADDRESS_HEADER)
                .and_then(|value| value.to_str().ok()?.trim().parse::<IpAddr>().ok());
            (address, Some(forwarder))
        }
        None => {
            let address = peer.map(|peer| client_address(peer, headers, trusted));
            (address, Some(node.id))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const NODE_TWO: &str = "10.0.0.2";

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    /// Node 1 of a cluster whose node 2 runs on [`NODE_TWO`].
    fn origin(peer: &str, headers: &[(&'static str, &str)]) -> (Option<IpAddr>, Option<u64>) {
        let public_ip = |node: u64| (node == 2).then(|| ip(NODE_TWO));
        let node = ThisNode {
            id: 1,
            public_ip: &public_ip,
        };
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, HeaderValue::from_str(value).expect("ascii"));
        }
        cluster_origin(&node, Some(ip(peer)), &map, &[])
    }

    #[test]
    fn a_forward_from_the_named_nodes_address_carries_the_client_address_it_names() {
        let headers = [
            (FORWARDED_HEADER, "2"),
            (CLIENT_ADDRESS_HEADER, "192.0.2.7"),
        ];
        assert_eq!(origin(NODE_TWO, &headers), (Some(ip("192.0.2.7")), Some(2)));
        let headers = [
            (FORWARDED_HEADER, "2"),
            (CLIENT_ADDRESS_HEADER, "2001:db8::9"),
        ];
        assert_eq!(
            origin(NODE_TWO, &headers),
            (Some(ip("2001:db8::9")), Some(2))
        );
    }

    #[test]
    fn a_forward_without_a_readable_client_address_stores_none_rather_than_the_nodes() {
        assert_eq!(
            origin(NODE_TWO, &[(FORWARDED_HEADER, "2")]),
            (None, Some(2))
        );
        let garbled = [
            (FORWARDED_HEADER, "2"),
            (CLIENT_ADDRESS_HEADER, "not-an-ip"),
        ];
        assert_eq!(origin(NODE_TWO, &garbled), (None, Some(2)));
    }

    #[test]
    fn a_client_address_sent_by_a_client_is_never_believed() {
        let spoofed = [(CLIENT_ADDRESS_HEADER, "192.0.2.7")];
        assert_eq!(
            origin("198.51.100.1", &spoofed),
            (Some(ip("198.51.100.1")), Some(1)),
            "no Wharf-Forwarded"
        );
        let claimed = [
            (FORWARDED_HEADER, "2"),
            (CLIENT_ADDRESS_HEADER, "192.0.2.7"),
        ];
        assert_eq!(
            origin("198.51.100.1", &claimed),
            (Some(ip("198.51.100.1")), Some(1)),
            "claims to be node 2 from another address"
        );
        let unknown = [
            (FORWARDED_HEADER, "9"),
            (CLIENT_ADDRESS_HEADER, "192.0.2.7"),
        ];
        assert_eq!(
            origin(NODE_TWO, &unknown),
            (Some(ip(NODE_TWO)), Some(1)),
            "names a node the cluster does not know"
        );
    }
}
