package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// refusedRange is a block of addresses no run may reach unless the operator
// opens it, and why.
type refusedRange struct {
	prefix netip.Prefix
	why    string
}

// embedding marks the IPv6 ranges that carry an IPv4 address in their bits:
// a translator or relay on the way would deliver to that IPv4 address, so
// judging the IPv6 address alone could reach a private one.
type embedding struct {
	prefix netip.Prefix
	why    string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// refused is the table vetAddr reads, from the IANA special-purpose address
// registries and the ranges cloud hosts use for themselves. Order matters
// only for the reason given when ranges nest.
var refused = []refusedRange{
	{mustPrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{mustPrefix("10.0.0.0/8"), "private (10.0.0.0/8)"},
	{mustPrefix("100.64.0.0/10"), "carrier-grade NAT (100.64.0.0/10)"},
	{mustPrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{mustPrefix("169.254.0.0/16"), "link-local, where cloud metadata lives (169.254.0.0/16)"},
	{mustPrefix("172.16.0.0/12"), "private (172.16.0.0/12)"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{mustPrefix("192.0.2.0/24"), "documentation (192.0.2.0/24)"},
	{mustPrefix("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"},
	{mustPrefix("192.168.0.0/16"), "private (192.168.0.0/16)"},
	{mustPrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{mustPrefix("198.51.100.0/24"), "documentation (198.51.100.0/24)"},
	{mustPrefix("203.0.113.0/24"), "documentation (203.0.113.0/24)"},
	{mustPrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{mustPrefix("255.255.255.255/32"), "broadcast (255.255.255.255)"},
	{mustPrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},

	{mustPrefix("::/128"), "unspecified (::)"},
	{mustPrefix("::1/128"), "loopback (::1)"},
	{mustPrefix("100::/64"), "discard-only (100::/64)"},
	{mustPrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{mustPrefix("2001::/23"), "IETF protocol assignments (2001::/23)"},
	{mustPrefix("3fff::/20"), "documentation (3fff::/20)"},
	{mustPrefix("fc00::/7"), "unique-local (fc00::/7)"},
	{mustPrefix("fe80::/10"), "link-local (fe80::/10)"},
	{mustPrefix("fec0::/10"), "site-local (fec0::/10)"},
	{mustPrefix("ff00::/8"), "multicast (ff00::/8)"},
}

// embeddings are checked before refused: their reason names the IPv4 address
// inside. IPv4-mapped addresses (::ffff:0:0/96) are not here: they are the IPv4
// address itself on the wire, and vetAddr judges them as such.
var embeddings = []embedding{
	{mustPrefix("::/96"), "IPv4-compatible IPv6 (::/96)"},
	{mustPrefix("64:ff9b::/96"), "NAT64 (64:ff9b::/96)"},
	{mustPrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{mustPrefix("2001::/32"), "Teredo (2001::/32)"},
	{mustPrefix("2002::/16"), "6to4 (2002::/16)"},
}

// globalUnicast6 is the only IPv6 block allocated for global unicast; anything
// outside it is refused even when no row above names it.
var globalUnicast6 = mustPrefix("2000::/3")

// vetAddr returns why a run may not reach a, or "" when it may. The operator's
// allow list wins over every rule; then the host's own addresses (local) are
// refused, whatever range they are in, so a run cannot reach airlock's API or
// the host's services on a public address; then the table.
func vetAddr(a netip.Addr, allow []netip.Prefix, local []netip.Addr) string {
	a = a.WithZone("")
	// ::ffff:10.0.0.1 is 10.0.0.1 when dialed: judge and open it as that.
	a = a.Unmap()
	if covered(a, allow) {
		return ""
	}
	for _, l := range local {
		if l.WithZone("").Unmap() == a {
			return "one of the host's own addresses"
		}
	}
	if a.Is6() && !a.IsLoopback() && !a.IsUnspecified() {
		for _, e := range embeddings {
			if e.prefix.Contains(a) {
				return "IPv6 embedding an IPv4 address: " + e.why
			}
		}
	}
	for _, r := range refused {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "not global unicast IPv6 (outside 2000::/3)"
	}
	return ""
}

func covered(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hostAddrsFor is how long the host's addresses, once listed, are taken as
// they were: listing them is a netlink dump of about 100 µs, on the path of
// every new connection. An address the host gained within that time is not
// refused as its own yet (the private, loopback and link-local ranges always
// are).
const hostAddrsFor = time.Second

var hostAddrs struct {
	sync.Mutex
	at    time.Time
	addrs []netip.Addr
}

// recentInterfaceAddrs is interfaceAddrs, listed at most once in
// hostAddrsFor.
func recentInterfaceAddrs() ([]netip.Addr, error) {
	hostAddrs.Lock()
	defer hostAddrs.Unlock()
	if time.Since(hostAddrs.at) < hostAddrsFor {
		return hostAddrs.addrs, nil
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return nil, err
	}
	hostAddrs.at, hostAddrs.addrs = time.Now(), addrs
	return addrs, nil
}

// interfaceAddrs lists the host's own addresses, on every interface.
func interfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}
