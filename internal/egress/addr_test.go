package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestVetAddr(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("203.0.114.7"), netip.MustParseAddr("2a01:4f8::7")}
	allow := []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("fd00:1::/64")}
	tests := []struct {
		addr string
		want string // a part of the reason; "" when allowed
	}{
		// Public addresses pass.
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:93.184.215.14", ""},

		{"127.0.0.1", "loopback"},
		{"127.255.0.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, // mapped: judged as its IPv4
		{"0.0.0.0", "this network"},
		{"::", "unspecified"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"192.0.0.1", "IETF"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.1", "documentation"},
		{"203.0.113.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"192.88.99.1", "6to4 relay"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"fc00::1", "unique-local"},
		{"fd12:3456::1", "unique-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"64:ff9b::a00:1", "NAT64"},     // 10.0.0.1 inside
		{"64:ff9b::5db8:d70e", "NAT64"}, // a public IPv4 inside, refused all the same
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"2002:a00:1::1", "6to4"},
		{"2001:0:4136:e378::1", "Teredo"},
		{"::a00:1", "IPv4-compatible"},
		{"2001:db8::1", "documentation"},
		{"2001:2::1", "IETF"},
		{"3fff::1", "documentation"},
		{"100::1", "discard"},
		{"4000::1", "not global unicast"},

		// The host's own addresses, public or not.
		{"203.0.114.7", "host's own"},
		{"::ffff:203.0.114.7", "host's own"},
		{"2a01:4f8::7", "host's own"},

		// The operator's ranges win.
		{"10.20.3.4", ""},
		{"::ffff:10.20.3.4", ""},
		{"10.21.0.1", "private"},
		{"fd00:1::5", ""},
		{"fd00:2::5", "unique-local"},
	}
	for _, tt := range tests {
		got := vetAddr(netip.MustParseAddr(tt.addr), allow, local)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("vetAddr(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestVetAddrAllowOpensLoopback(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	if why := vetAddr(netip.MustParseAddr("127.0.0.1"), allow, []netip.Addr{netip.MustParseAddr("127.0.0.1")}); why != "" {
		t.Errorf("allow_cidrs should open even the host's own loopback: %q", why)
	}
}

func TestInterfaceAddrs(t *testing.T) {
	addrs, err := interfaceAddrs()
	if err != nil {
		t.Skip("no interfaces here:", err)
	}
	for _, a := range addrs {
		if a.IsLoopback() {
			return
		}
	}
	t.Errorf("the host's addresses %v lack its loopback", addrs)
}
