//! Free loopback ports for servers a test must name before they start (an
//! issuer URL in a config, a replica's address, a restart on the same port).

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the search starts when the kernel's ephemeral range is unknown.
const EPHEMERAL_DEFAULT: u16 = 32768;
/// The lowest port handed out.
const LOWEST: u16 = 10_000;

/// A free loopback port, below the kernel's ephemeral range.
///
/// Binding port 0 would hand out a port from that range, and once let go it
/// can be taken, before the test binds it again, as the local port of any
/// outgoing connection; the tests running beside it make hundreds. A port
/// below the range is only ever taken by another listener. Each process
/// walks its own sequence of them (from its pid), and a port that cannot be
/// bound now is skipped.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let top = ephemeral_start().max(LOWEST + 1000);
    let span = u32::from(top - LOWEST);
    let start = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        // A step coprime with most spans, so the walk covers many ports.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = LOWEST + ((start + n.wrapping_mul(7919)) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// The first port of the kernel's ephemeral range (Linux), or the usual one.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_below_the_ephemeral_range_and_not_repeated() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        for &port in &ports {
            assert!((LOWEST..ephemeral_start()).contains(&port), "{port}");
            TcpListener::bind(("127.0.0.1", port)).expect("still free");
        }
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    }
}
