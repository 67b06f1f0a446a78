//! Who a connection belongs to: its peer's address, or, for a connection
//! from a trusted proxy, the client address the proxy forwards in
//! `X-Forwarded-For`.
//!
//! The forwarded address is the right-most entry of `X-Forwarded-For`
//! (every instance of the header, in order) that is not itself a trusted
//! proxy: entries further left were written by the client and prove
//! nothing. A header that is missing, or has an entry that is not an
//! address where the client should be, leaves the proxy's own address.

use std::net::IpAddr;
use std::str::FromStr;

use http::HeaderMap;
use ipnet::IpNet;

/// The networks whose connections are proxies, trusted to say in
/// `X-Forwarded-For` which client they carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

/// A `trusted_proxies` entry that is neither an address nor a network.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is neither an IP address nor a network in CIDR form (e.g. \"10.0.0.0/8\")")]
pub struct BadNetwork(String);

impl TrustedProxies {
    /// Parses entries, each an address (`"127.0.0.1"`, `"::1"`) or a
    /// network (`"10.0.0.0/8"`).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, BadNetwork> {
        entries.iter().map(|e| parse_network(e.as_ref())).collect::<Result<_, _>>().map(Self)
    }

    /// Whether any proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `addr` is a trusted proxy.
    pub fn trusts(&self, addr: IpAddr) -> bool {
        let addr = canonical(addr);
        self.0.iter().any(|net| net.contains(&addr))
    }

    /// The client a request from trusted proxy `peer` comes from.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer;
        let entries = headers.get_all("x-forwarded-for").iter().rev().flat_map(|value| {
            let text = value.to_str().unwrap_or("");
            text.rsplit(',').map(str::trim)
        });
        for entry in entries {
            let Some(addr) = parse_forwarded(entry) else { return peer };
            client = addr;
            if !self.trusts(addr) {
                break;
            }
        }
        client
    }
}

/// One `trusted_proxies` entry.
pub fn parse_network(entry: &str) -> Result<IpNet, BadNetwork> {
    let entry = entry.trim();
    if let Ok(net) = IpNet::from_str(entry) {
        return Ok(net);
    }
    IpAddr::from_str(entry).map(IpNet::from).map_err(|_| BadNetwork(entry.to_owned()))
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (IPv4
/// `a.b.c.d:port`, IPv6 `[addr]:port`) as some proxies write it.
fn parse_forwarded(entry: &str) -> Option<IpAddr> {
    if let Ok(addr) = IpAddr::from_str(entry) {
        return Some(canonical(addr));
    }
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split_once(']').and_then(|(addr, _)| IpAddr::from_str(addr).ok()).map(canonical);
    }
    let (addr, port) = entry.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    IpAddr::from_str(addr).ok().map(canonical)
}

/// An IPv4 address mapped into IPv6 (a dual-stack listener's view of an
/// IPv4 peer) as the IPv4 address, so that `127.0.0.1` matches it.
pub(super) fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append("x-forwarded-for", v.parse().unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_client_is_the_right_most_untrusted_entry() {
        let proxies = TrustedProxies::parse(&["127.0.0.1", "10.0.0.0/8"]).unwrap();
        let peer = ip("127.0.0.1");
        // The client wrote a lie on the left; the proxies appended the truth.
        assert_eq!(proxies.client(peer, &headers(&["6.6.6.6, 203.0.113.7, 10.1.2.3"])), ip("203.0.113.7"));
        // Several header instances are one list, in order.
        assert_eq!(proxies.client(peer, &headers(&["6.6.6.6", "203.0.113.7:5555", "10.1.2.3"])), ip("203.0.113.7"));
        assert_eq!(proxies.client(peer, &headers(&["[2001:db8::1]:443"])), ip("2001:db8::1"));
        // Nothing forwarded, or garbage where the client should be: the proxy itself.
        assert_eq!(proxies.client(peer, &HeaderMap::new()), peer);
        assert_eq!(proxies.client(peer, &headers(&["not-an-address, 10.1.2.3"])), peer);
        // Only proxies in the chain: the left-most of them.
        assert_eq!(proxies.client(peer, &headers(&["10.9.9.9, 10.1.2.3"])), ip("10.9.9.9"));
    }

    #[test]
    fn entries_are_addresses_or_networks_and_mapped_addresses_match() {
        let proxies = TrustedProxies::parse(&["127.0.0.1", "::1", "192.168.0.0/16"]).unwrap();
        assert!(proxies.trusts(ip("127.0.0.1")) && proxies.trusts(ip("::ffff:127.0.0.1")));
        assert!(proxies.trusts(ip("192.168.4.4")) && !proxies.trusts(ip("127.0.0.2")));
        assert!(TrustedProxies::parse(&["10.0.0.0/33"]).is_err());
        assert!(TrustedProxies::parse(&["proxy.local"]).is_err());
    }
}
