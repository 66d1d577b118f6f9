package netpolicy

import (
	"net/netip"
	"testing"
)

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	b := a.AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

// ownRow reports whether r is the most specific row holding ip.
func ownRow(r specialRange, ip netip.Addr) bool {
	for _, o := range specialPurpose {
		if o.prefix.Bits() > r.prefix.Bits() && o.prefix.Contains(ip) {
			return false
		}
	}
	return true
}

// TestEverySpecialPurposeRange checks each row of the registries' table
// at both ends of its block (where no more specific row takes over): a
// block that is not globally reachable is refused, one that is passes.
// The two blocks whose verdict is the IPv4 address they carry are tested
// by TestEmbeddedIPv4Forms.
func TestEverySpecialPurposeRange(t *testing.T) {
	t.Parallel()
	for _, r := range specialPurpose {
		if r.prefix == nat64Prefix || r.prefix == sixToFour {
			continue
		}
		tested := 0
		for i, ip := range []netip.Addr{r.prefix.Masked().Addr(), lastAddr(r.prefix)} {
			if !ownRow(r, ip) || (i == 1 && r.prefix.IsSingleIP()) {
				continue
			}
			tested++
			reason := destinationRefusal(ip)
			if want := r.global != reachYes; (reason != "") != want {
				t.Errorf("%s (%s, %s): %s refused=%v (%q), want %v", r.prefix, r.name, r.rfc, ip, reason != "", reason, want)
			}
		}
		if tested == 0 {
			t.Errorf("%s: neither end is its own; test it by hand", r.prefix)
		}
	}
}

// TestSpecialPurposeRangesByHand restates, without the table, the
// ranges that once passed the policy and a few that must keep passing:
// a wrong row in the table fails here.
func TestSpecialPurposeRangesByHand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr    string
		refused bool
	}{
		{"192.0.2.10", true},
		{"198.51.100.7", true},
		{"203.0.113.200", true},
		{"192.88.99.1", true},
		{"192.0.0.170", true},
		{"192.0.0.8", true},
		{"2001:2::1", true},
		{"2001:2:0:ffff::1", true},
		{"3fff::1", true},
		{"3fff:fff:ffff::1", true},
		{"5f00::1", true},
		{"100:0:0:1::1", true},
		{"2001:10::1", true},
		{"2001:1ff::1", true},
		{"fec0::1", true},
		{"4000::1", true}, // outside 2000::/3
		{"192.0.0.9", false},
		{"192.0.0.10", false},
		{"192.31.196.1", false},
		{"192.175.48.6", false},
		{"2001:1::1", false},
		{"2001:1::2", false},
		{"2001:3::1", false},
		{"2001:4:112::1", false},
		{"2001:20::1", false},
		{"2620:4f:8000::1", false},
		{"3fff:1000::1", false}, // just past the documentation /20
		{"192.0.3.1", false},
		{"8.8.8.8", false},
		{"2a00:1450:4001::1", false},
	}
	for _, c := range cases {
		checkRefusal(t, "", c.addr, c.refused)
	}
}

// TestEmbeddedIPv4Forms: every IPv6 form that carries an IPv4 address
// is refused when the address inside would be, and the forms a stack may
// deliver to that address without a translator the operator chose
// (IPv4-compatible, SIIT, Teredo, local-use NAT64) are refused whatever
// they carry.
func TestEmbeddedIPv4Forms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		form, addr string
		refused    bool
	}{
		{"mapped", "::ffff:127.0.0.1", true},
		{"mapped", "::ffff:192.0.2.1", true},
		{"mapped", "::ffff:8.8.8.8", false},
		{"compatible", "::127.0.0.1", true},
		{"compatible", "::192.0.2.1", true},
		{"compatible", "::8.8.8.8", true},
		{"SIIT", "::ffff:0:127.0.0.1", true},
		{"SIIT", "::ffff:0:10.0.0.1", true},
		{"SIIT", "::ffff:0:192.0.2.1", true},
		{"SIIT", "::ffff:0:8.8.8.8", true},
		{"NAT64", "64:ff9b::127.0.0.1", true},
		{"NAT64", "64:ff9b::169.254.169.254", true},
		{"NAT64", "64:ff9b::198.51.100.1", true},
		{"NAT64", "64:ff9b::8.8.8.8", false},
		{"NAT64 local-use", "64:ff9b:1::10.0.0.1", true},
		{"NAT64 local-use", "64:ff9b:1::8.8.8.8", true},
		{"6to4", "2002:7f00:1::1", true},                         // 127.0.0.1
		{"6to4", "2002:c000:0201::1", true},                      // 192.0.2.1
		{"6to4", "2002:a9fe:a9fe::1", true},                      // 169.254.169.254
		{"6to4", "2002:0808:0808::1", false},                     // 8.8.8.8
		{"Teredo", "2001:0:4136:e378:8000:63bf:80ff:fffe", true}, // client 127.0.0.1, obfuscated
		{"Teredo", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", true}, // client 8.8.8.8, obfuscated
	}
	for _, c := range cases {
		checkRefusal(t, c.form+" ", c.addr, c.refused)
	}
}

// checkRefusal checks that the policy refuses addr, or lets it pass.
func checkRefusal(t *testing.T, label, addr string, refused bool) {
	t.Helper()
	got := destinationRefusal(netip.MustParseAddr(addr))
	if (got != "") != refused {
		t.Errorf("%s%s: refused=%v (%q), want %v", label, addr, got != "", got, refused)
	}
}
