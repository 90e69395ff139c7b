//! Free loopback ports, found by binding `127.0.0.1:0` and releasing the socket.

use std::net::{SocketAddr, TcpListener};

use super::error::HarnessError;

/// `count` distinct free ports on 127.0.0.1.
///
/// Every listener is held until all are bound, so the ports are distinct from each other; once
/// released, another process may take one before the node binds it. [`super::Cluster::start`]
/// retries with fresh ports when a node reports its address in use.
pub fn free_loopback_addrs(count: usize) -> Result<Vec<SocketAddr>, HarnessError> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(HarnessError::io("binding 127.0.0.1:0 to find a free port"))?;
    listeners
        .iter()
        .map(TcpListener::local_addr)
        .collect::<Result<Vec<_>, _>>()
        .map_err(HarnessError::io("reading a bound port"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ports_found_are_distinct_loopback_ports() {
        let addrs = free_loopback_addrs(6).expect("ports");
        let mut ports: Vec<u16> = addrs.iter().map(SocketAddr::port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 6);
        assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    }
}
