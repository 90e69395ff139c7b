//! The server under load: an `http://host:port` URL that must resolve to loopback addresses
//! only. Load never leaves this machine.

use std::net::{SocketAddr, ToSocketAddrs};

/// Why a target was refused.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Not an `http://host:port` URL (https and paths are not supported).
    #[error("target {url:?}: expected http://host:port (plain HTTP, no path)")]
    Unsupported {
        /// The URL given.
        url: String,
    },
    /// The host did not resolve.
    #[error("target {url:?} does not resolve: {source}")]
    Resolve {
        /// The URL given.
        url: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The host resolved to an address outside the loopback range.
    #[error(
        "target {url:?} resolves to {address}, which is not loopback: wharf-load only loads this machine"
    )]
    NotLoopback {
        /// The URL given.
        url: String,
        /// The offending address.
        address: SocketAddr,
    },
}

/// A loopback HTTP server to send requests to.
#[derive(Debug, Clone)]
pub struct Target {
    address: SocketAddr,
    authority: String,
}

impl Target {
    /// Parses `http://host:port` and checks that every address the host resolves to is
    /// loopback (127.0.0.0/8 or ::1).
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let unsupported = || TargetError::Unsupported {
            url: url.to_owned(),
        };
        let uri: http::Uri = url.parse().map_err(|_| unsupported())?;
        let authority = uri.authority().ok_or_else(unsupported)?;
        if uri.scheme_str() != Some("http") || !matches!(uri.path(), "" | "/") {
            return Err(unsupported());
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
        let addresses: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|source| TargetError::Resolve {
                url: url.to_owned(),
                source,
            })?
            .collect();
        if let Some(address) = addresses.iter().find(|a| !a.ip().is_loopback()) {
            return Err(TargetError::NotLoopback {
                url: url.to_owned(),
                address: *address,
            });
        }
        let address = *addresses.first().ok_or_else(unsupported)?;
        Ok(Target {
            address,
            authority: authority.as_str().to_owned(),
        })
    }

    /// The socket address connections go to.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The `Host` header value.
    pub fn authority(&self) -> &str {
        &self.authority
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_targets_are_accepted() {
        for url in [
            "http://127.0.0.1:8080",
            "http://127.0.0.2:1/",
            "http://localhost:8080",
            "http://[::1]:9000",
        ] {
            let target = Target::parse(url);
            assert!(target.is_ok(), "{url}: {target:?}");
        }
    }

    #[test]
    fn other_addresses_are_refused() {
        for url in [
            "http://10.0.0.1:8080",
            "http://192.168.1.1",
            "http://8.8.8.8:80",
            "http://0.0.0.0:8080",
        ] {
            assert!(
                matches!(Target::parse(url), Err(TargetError::NotLoopback { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn https_paths_and_garbage_are_refused() {
        for url in [
            "https://127.0.0.1:8443",
            "http://127.0.0.1:8080/v1",
            "127.0.0.1",
            "",
        ] {
            assert!(
                matches!(Target::parse(url), Err(TargetError::Unsupported { .. })),
                "{url}"
            );
        }
    }
}
