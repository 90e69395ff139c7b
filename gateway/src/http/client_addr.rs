//! The client's address: the TCP peer, or, when the peer is a configured trusted proxy, the
//! nearest untrusted address in `X-Forwarded-For`. Used to key anonymous clients' rate limits;
//! a client that is not behind a trusted proxy cannot choose its own key.

use std::net::IpAddr;
use std::str::FromStr;

use axum::http::HeaderMap;

/// An address or CIDR range (`10.0.0.0/8`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Whether `address` is in the range.
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, canonical(address)) {
            (IpAddr::V4(net), IpAddr::V4(addr)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(addr) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(addr)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(addr) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpRange {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network = canonical(
            address
                .trim()
                .parse::<IpAddr>()
                .map_err(|_| format!("'{text}' is not an IP address or CIDR range"))?,
        );
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("'{text}' has a bad prefix length"))?,
            None => max,
        };
        Ok(IpRange { network, prefix })
    }
}

/// IPv4-mapped IPv6 addresses as IPv4, so one client has one key.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// The client's address: `peer`, unless `peer` is trusted, in which case `X-Forwarded-For`
/// is walked from the right (the hop nearest to us) past trusted proxies to the first
/// untrusted address. Unparsable entries stop the walk at the last good address.
pub(crate) fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpRange]) -> IpAddr {
    let is_trusted = |address: IpAddr| trusted.iter().any(|range| range.contains(address));
    let mut client = canonical(peer);
    if !is_trusted(client) {
        return client;
    }
    let hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for hop in hops.iter().rev() {
        let Ok(address) = hop.parse::<IpAddr>() else {
            break;
        };
        client = canonical(address);
        if !is_trusted(client) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    fn forwarded(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_str(value).expect("ascii"),
        );
        headers
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let trusted: Vec<IpRange> = vec!["10.0.0.0/8".parse().expect("cidr")];
        let headers = forwarded("1.2.3.4, 5.6.7.8, 10.0.0.2");
        assert_eq!(
            client_address(ip("10.0.0.1"), &headers, &trusted),
            ip("5.6.7.8")
        );
        assert_eq!(
            client_address(ip("9.9.9.9"), &headers, &trusted),
            ip("9.9.9.9")
        );
        assert_eq!(
            client_address(ip("10.0.0.1"), &HeaderMap::new(), &trusted),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn ranges_parse_and_match_both_families() {
        let range: IpRange = "192.168.0.0/16".parse().expect("cidr");
        assert!(range.contains(ip("192.168.4.5")));
        assert!(range.contains(ip("::ffff:192.168.4.5")));
        assert!(!range.contains(ip("192.169.0.1")));
        let one: IpRange = "::1".parse().expect("ip");
        assert!(one.contains(ip("::1")));
        assert!("10.0.0.0/33".parse::<IpRange>().is_err());
        assert!("nonsense".parse::<IpRange>().is_err());
    }
}
