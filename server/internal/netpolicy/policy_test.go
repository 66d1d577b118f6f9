package netpolicy

import (
	"net/netip"
	"testing"
)

func TestDestinationRefusal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"10.0.0.1", true},
		{"172.16.5.4", true},
		{"192.168.1.1", true},
		{"fd00::1", true},
		{"169.254.169.254", true},
		{"fe80::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"100.64.0.1", true},
		{"255.255.255.255", true},
		{"93.184.216.34", false},
		{"2606:2800:220:1:248:1893:25c8:1946", false},
		{"172.32.0.1", false},
	}
	for _, c := range cases {
		got := destinationRefusal(netip.MustParseAddr(c.addr)) != ""
		if got != c.refused {
			t.Errorf("%s: refused=%v, want %v", c.addr, got, c.refused)
		}
	}
}
