//! The import guard: what a URL sluice fetches on a caller's word may name,
//! decided before any connection is made. In this order: the scheme (`http`
//! or `https`) → no userinfo → the port (the scheme's own, unless the
//! operator allows others) → the host: imports off, an allow-list of hosts,
//! or any public host → each address the host is, whether written in the URL
//! (odd spellings such as `127.1`, `0x7f.1` or `2130706433` are parsed by
//! the URL parser to the address they mean before this sees them) or
//! resolved once ([`GuardedResolver`]: every address checked, and the
//! connection made to those very addresses, so a second lookup cannot
//! rebind the name) → against [`REFUSED_V4`] and [`REFUSED_V6`], with the
//! IPv4 address inside an IPv4-mapped, -compatible, NAT64 or 6to4 address
//! checked as itself.
//!
//! No setting admits a private, link-local or metadata address. The one
//! relaxation, `SLUICE_IMPORT_ALLOW_LOOPBACK`, admits loopback alone (for
//! development and tests).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

/// Where imports may fetch from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Imports are off.
    Off,
    /// Any host whose addresses are all public (the default).
    Public,
    /// Only these hosts (exact names, or `*.example.com` for its
    /// subdomains), and only at public addresses.
    Hosts(Vec<String>),
}

/// The guard's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Where imports may fetch from.
    pub reach: Reach,
    /// Loopback admitted (development and tests only).
    pub allow_loopback: bool,
    /// Ports admitted beside the scheme's own (80 for http, 443 for https).
    pub ports: Vec<u16>,
}

/// Why a URL or an address is refused: said to the caller naming the host
/// at most, never a path or a query (a presigned URL's credentials are
/// there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Imports are off on this server.
    #[error("imports are off on this server: upload the file instead")]
    Off,
    /// Not `http` or `https`.
    #[error("only http and https URLs can be imported, not {0}:")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error("a URL with a user name or password in it is not imported: no credential is ever sent")]
    Userinfo,
    /// A port other than the scheme's own.
    #[error("port {0} is not one imports may use on this server (only the scheme's own port)")]
    Port(u16),
    /// No host.
    #[error("the URL names no host")]
    NoHost,
    /// A host not on the operator's list.
    #[error("{0} is not among the hosts this server imports from")]
    NotListed(String),
    /// An address in a refused range.
    #[error("{host} is {range} ({addr}): imports fetch from public addresses only")]
    Address {
        /// The host as the URL named it.
        host: String,
        /// The address it is.
        addr: IpAddr,
        /// The range's name in the table.
        range: &'static str,
    },
    /// A name that resolves to no address.
    #[error("{0} does not resolve to any address")]
    Unresolved(String),
}

/// One refused range of IPv4 addresses: its first address, its prefix
/// length, its name.
pub type Range4 = (Ipv4Addr, u8, &'static str);
/// One refused range of IPv6 addresses.
pub type Range6 = (Ipv6Addr, u8, &'static str);

/// The IPv4 ranges refused, and why (IANA's special-purpose registry, all
/// of its not globally reachable rows, and multicast).
pub const REFUSED_V4: &[Range4] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (0.0.0.0/8)"),
    (
        Ipv4Addr::new(10, 0, 0, 0),
        8,
        "a private address (RFC 1918)",
    ),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "a shared (CGNAT) address"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local (cloud metadata lives here)",
    ),
    (
        Ipv4Addr::new(172, 16, 0, 0),
        12,
        "a private address (RFC 1918)",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "an IETF protocol assignment",
    ),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "a documentation address"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "a 6to4 relay address"),
    (
        Ipv4Addr::new(192, 168, 0, 0),
        16,
        "a private address (RFC 1918)",
    ),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "a benchmarking address"),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "a documentation address",
    ),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "a documentation address"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(255, 255, 255, 255), 32, "broadcast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "a reserved address"),
];

/// The only IPv6 addresses admitted: global unicast (`2000::/3`), outside
/// the rows of [`REFUSED_V6`] that lie within it. IPv6 is admitted, not
/// denied: an address of any other range (the IPv4-translated
/// `::ffff:0:0:0/96`, a range assigned after this was written) is refused,
/// except the forms that carry an IPv4 address, checked as it.
pub const GLOBAL_UNICAST: Range6 = (
    Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0),
    3,
    "not a global unicast address (2000::/3)",
);

/// The IPv6 ranges refused by name: those inside [`GLOBAL_UNICAST`] that
/// are not globally reachable, and, for the refusal's words, the usual
/// ones outside it. The forms that carry an IPv4 address (mapped
/// `::ffff:0:0/96`, compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) are checked by the address they carry instead.
pub const REFUSED_V6: &[Range6] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "the unspecified address"),
    (Ipv6Addr::LOCALHOST, 128, "loopback"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "a local-use NAT64 address",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "a discard-only address",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "a Teredo address",
    ),
    (
        Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0),
        48,
        "a benchmarking address",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "a documentation address",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "a documentation address",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "a unique-local address (fd00:ec2::254 is EC2's metadata)",
    ),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "a site-local address",
    ),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

fn in_v4(addr: Ipv4Addr, (net, len, _): &Range4) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
    u32::from(addr) & mask == u32::from(*net) & mask
}

fn in_v6(addr: Ipv6Addr, (net, len, _): &Range6) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(*len)).unwrap_or(0);
    u128::from(addr) & mask == u128::from(*net) & mask
}

/// The IPv4 address an IPv6 address carries, where it is one of the forms
/// that reach an IPv4 host: mapped, compatible, NAT64 (the well-known
/// prefix) or 6to4.
pub fn embedded_v4(addr: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(addr);
    let low = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if let Some(v4) = addr.to_ipv4_mapped() {
        return Some(v4);
    }
    if bits >> 32 == 0 && bits > 1 {
        return Some(low); // ::a.b.c.d, IPv4-compatible (deprecated)
    }
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return Some(low); // 64:ff9b::a.b.c.d, NAT64
    }
    if addr.segments()[0] == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32)); // 6to4
    }
    None
}

impl Guard {
    /// Imports off.
    pub fn off() -> Self {
        Self {
            reach: Reach::Off,
            allow_loopback: false,
            ports: Vec::new(),
        }
    }

    /// Why `addr` is refused, if it is: the name of its range in the table.
    pub fn refused_range(&self, addr: IpAddr) -> Option<&'static str> {
        match addr {
            IpAddr::V4(v4) => {
                if self.allow_loopback && v4.is_loopback() {
                    return None;
                }
                REFUSED_V4.iter().find(|r| in_v4(v4, r)).map(|r| r.2)
            }
            IpAddr::V6(v6) => {
                if let Some(v4) = embedded_v4(v6) {
                    return self.refused_range(IpAddr::V4(v4));
                }
                if self.allow_loopback && v6 == Ipv6Addr::LOCALHOST {
                    return None;
                }
                if let Some(named) = REFUSED_V6.iter().find(|r| in_v6(v6, r)) {
                    return Some(named.2);
                }
                (!in_v6(v6, &GLOBAL_UNICAST)).then_some(GLOBAL_UNICAST.2)
            }
        }
    }

    /// Checks `addr`, which `host` is.
    pub fn check_addr(&self, host: &str, addr: IpAddr) -> Result<(), Refusal> {
        match self.refused_range(addr) {
            None => Ok(()),
            Some(range) => Err(Refusal::Address {
                host: host.to_owned(),
                addr,
                range,
            }),
        }
    }

    /// Everything about `url` that needs no lookup: the reach, the scheme,
    /// no userinfo, the port, a host on the list, and an address written
    /// in the URL. A name's addresses are checked as it is resolved.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if self.reach == Reach::Off {
            return Err(Refusal::Off);
        }
        let default = match url.scheme() {
            "http" => 80,
            "https" => 443,
            other => return Err(Refusal::Scheme(other.to_owned())),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Userinfo);
        }
        let port = url.port().unwrap_or(default);
        if port != default && !self.ports.contains(&port) {
            return Err(Refusal::Port(port));
        }
        let host = url.host().ok_or(Refusal::NoHost)?;
        let name = host_name(&host);
        if let Reach::Hosts(list) = &self.reach
            && !list.iter().any(|allowed| host_matches(allowed, &name))
        {
            return Err(Refusal::NotListed(name));
        }
        match host {
            Host::Ipv4(v4) => self.check_addr(&name, IpAddr::V4(v4)),
            Host::Ipv6(v6) => self.check_addr(&name, IpAddr::V6(v6)),
            Host::Domain(_) => Ok(()),
        }
    }

    /// Checks every address a name resolved to: one refused refuses the
    /// name (a name that is public and private at once is not fetched).
    pub fn check_resolved(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), Refusal> {
        if addrs.is_empty() {
            return Err(Refusal::Unresolved(host.to_owned()));
        }
        addrs.iter().try_for_each(|a| self.check_addr(host, a.ip()))
    }
}

/// A host as logs and refusals name it.
fn host_name(host: &Host<&str>) -> String {
    match host {
        Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(v4) => v4.to_string(),
        Host::Ipv6(v6) => format!("[{v6}]"),
    }
}

/// Whether `host` is `allowed`: the same name, or under `*.name`.
fn host_matches(allowed: &str, host: &str) -> bool {
    let allowed = allowed.trim().trim_end_matches('.').to_ascii_lowercase();
    match allowed.strip_prefix("*.") {
        Some(parent) => host.ends_with(&format!(".{parent}")),
        None => host == allowed,
    }
}

/// The resolver of the import client's connector: each name looked up once,
/// every address checked, and only those addresses handed to the connector,
/// which connects to them (it never looks the name up again). A refusal is
/// the lookup's error, found again by [`refusal_in`].
#[derive(Debug, Clone)]
pub struct GuardedResolver(pub Arc<Guard>);

impl tower::Service<hyper_util::client::legacy::connect::dns::Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
        let guard = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| Refusal::Unresolved(host.clone()))?
                .collect();
            guard.check_resolved(&host, &addrs)?;
            Ok(addrs.into_iter())
        })
    }
}

/// The guard's refusal somewhere in `error`'s chain of sources, if that is
/// why it failed.
pub fn refusal_in(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<Refusal>() {
            return Some(r.clone());
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public() -> Guard {
        Guard {
            reach: Reach::Public,
            allow_loopback: false,
            ports: Vec::new(),
        }
    }

    fn refused(guard: &Guard, url: &str) -> Refusal {
        guard
            .check_url(&Url::parse(url).expect("a URL"))
            .expect_err(url)
    }

    /// Every row of the table refuses its first and last address, and the
    /// addresses just outside it are not refused by that row.
    #[test]
    fn each_v4_row_refuses_its_range_and_only_it() {
        let guard = public();
        for row in REFUSED_V4 {
            let (net, len, name) = *row;
            let first = u32::from(net);
            let last = first | (u32::MAX.checked_shr(u32::from(len)).unwrap_or(0));
            for inside in [first, last] {
                let addr = IpAddr::V4(Ipv4Addr::from(inside));
                assert!(guard.refused_range(addr).is_some(), "{addr} ({name})");
            }
            if let Some(after) = last.checked_add(1) {
                assert!(
                    !in_v4(Ipv4Addr::from(after), row),
                    "{name} ends at its prefix"
                );
            }
        }
    }

    #[test]
    fn each_v6_row_refuses_its_range() {
        let guard = public();
        for (net, len, name) in REFUSED_V6 {
            let first = u128::from(*net);
            let last = first | u128::MAX.checked_shr(u32::from(*len)).unwrap_or(0);
            for inside in [first, last] {
                let addr = IpAddr::V6(Ipv6Addr::from(inside));
                assert!(guard.refused_range(addr).is_some(), "{addr} ({name})");
            }
        }
    }

    #[test]
    fn public_addresses_pass() {
        let guard = public();
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(guard.refused_range(ip), None, "{addr}");
        }
    }

    /// The addresses every SSRF write-up names, in every form that reaches
    /// them.
    #[test]
    fn metadata_private_and_loopback_in_every_form_are_refused() {
        let guard = public();
        for addr in [
            "169.254.169.254",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "::ffff:a9fe:a9fe",
            "::169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2002:c0a8:0101::1",
            "64:ff9b::7f00:1",
            "100.100.100.200",
            "0.0.0.0",
            "::",
            "::1",
            "fe80::1",
            "ff02::1",
            "224.0.0.251",
            "255.255.255.255",
            // IPv4-translated (SIIT, ::ffff:0:0:0/96): outside global
            // unicast, so refused, though no row names it.
            "::ffff:0:7f00:1",
            "::ffff:0:a9fe:a9fe",
            // Ranges no row names, outside 2000::/3.
            "4000::1",
            "1::1",
            "e000::1",
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert!(guard.refused_range(ip).is_some(), "{addr}");
        }
        assert!(matches!(
            refused(&guard, "http://[::ffff:0:7f00:1]/"),
            Refusal::Address { .. }
        ));
    }

    /// The URL parser turns odd spellings into the address they mean, and
    /// the guard sees that address.
    #[test]
    fn odd_spellings_of_an_address_are_the_address() {
        let guard = public();
        for url in [
            "http://127.1/",
            "http://127.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
            "http://169.254.169.254./",
            "http://0xa9.0xfe.0xa9.0xfe/",
            "http://2852039166/",
            "http://[fd00:ec2::254]/",
            "http://0/",
            "http://10.1/",
        ] {
            assert!(
                matches!(refused(&guard, url), Refusal::Address { .. }),
                "{url}"
            );
        }
    }

    #[test]
    fn schemes_userinfo_and_ports_are_refused_before_any_lookup() {
        let guard = public();
        assert!(matches!(refused(&guard, "ftp://example.com/a"), Refusal::Scheme(s) if s == "ftp"));
        assert!(matches!(
            refused(&guard, "file:///etc/passwd"),
            Refusal::Scheme(_)
        ));
        assert!(matches!(
            refused(&guard, "gopher://example.com/"),
            Refusal::Scheme(_)
        ));
        assert_eq!(
            refused(&guard, "http://user:pw@example.com/"),
            Refusal::Userinfo
        );
        assert_eq!(
            refused(&guard, "http://user@example.com/"),
            Refusal::Userinfo
        );
        assert_eq!(
            refused(&guard, "http://example.com:8080/"),
            Refusal::Port(8080)
        );
        assert_eq!(
            refused(&guard, "https://example.com:80/"),
            Refusal::Port(80)
        );
        assert!(
            guard
                .check_url(&Url::parse("https://example.com:443/x").unwrap())
                .is_ok()
        );
        assert!(
            guard
                .check_url(&Url::parse("http://example.com/x").unwrap())
                .is_ok()
        );
        let ports = Guard {
            ports: vec![8080],
            ..public()
        };
        assert!(
            ports
                .check_url(&Url::parse("http://example.com:8080/").unwrap())
                .is_ok()
        );
    }

    #[test]
    fn off_refuses_everything_and_a_list_admits_only_its_hosts() {
        assert_eq!(refused(&Guard::off(), "https://example.com/"), Refusal::Off);
        let listed = Guard {
            reach: Reach::Hosts(vec!["files.example.com".into(), "*.cdn.example".into()]),
            ..public()
        };
        let ok = |u: &str| listed.check_url(&Url::parse(u).unwrap()).is_ok();
        assert!(ok("https://files.example.com/a"));
        assert!(ok("https://FILES.example.com./a"));
        assert!(ok("https://eu.cdn.example/a"));
        assert!(!ok("https://cdn.example/a"));
        assert!(!ok("https://example.com/a"));
        assert!(!ok("https://files.example.com.evil.test/a"));
        // A listed host is still held to public addresses.
        let listed_ip = Guard {
            reach: Reach::Hosts(vec!["10.0.0.1".into()]),
            ..public()
        };
        assert!(matches!(
            refused(&listed_ip, "http://10.0.0.1/"),
            Refusal::Address { .. }
        ));
    }

    #[test]
    fn loopback_alone_is_what_the_development_switch_admits() {
        let dev = Guard {
            allow_loopback: true,
            ..public()
        };
        for addr in ["127.0.0.1", "127.5.5.5", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(dev.refused_range(addr.parse().unwrap()), None, "{addr}");
        }
        for addr in [
            "10.0.0.1",
            "169.254.169.254",
            "fd00:ec2::254",
            "0.0.0.0",
            "192.168.1.1",
            "fe80::1",
        ] {
            assert!(dev.refused_range(addr.parse().unwrap()).is_some(), "{addr}");
        }
    }

    #[test]
    fn a_name_is_refused_if_any_of_its_addresses_is() {
        let guard = public();
        let public_one: SocketAddr = "93.184.216.34:0".parse().unwrap();
        let private_one: SocketAddr = "10.0.0.7:0".parse().unwrap();
        assert!(guard.check_resolved("example.com", &[public_one]).is_ok());
        assert!(matches!(
            guard.check_resolved("rebind.test", &[public_one, private_one]),
            Err(Refusal::Address { range, .. }) if range.contains("private")
        ));
        assert_eq!(
            guard.check_resolved("nothing.test", &[]),
            Err(Refusal::Unresolved("nothing.test".into()))
        );
    }

    #[test]
    fn a_refusal_names_the_host_never_the_path_or_query() {
        let guard = public();
        let r = refused(
            &guard,
            "http://169.254.169.254/latest/meta-data/?X-Amz-Signature=secret",
        );
        let said = r.to_string();
        assert!(said.contains("169.254.169.254"), "{said}");
        assert!(
            !said.contains("meta-data") && !said.contains("secret"),
            "{said}"
        );
    }
}
