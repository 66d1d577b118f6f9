package netpolicy

import "net/netip"

// reach is the "Globally Reachable" column of the IANA special-purpose
// registries.
type reach int8

const (
	reachNo  reach = iota // False: never beyond an administrative domain
	reachYes              // True
	reachNA               // N/A: the registry leaves it to the row's RFC
)

// specialRange is one row of a special-purpose address registry.
type specialRange struct {
	prefix netip.Prefix
	name   string
	rfc    string
	global reach
}

// specialPurpose is every row of the IANA IPv4 Special-Purpose Address
// Registry and the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry and
// .../iana-ipv6-special-registry), which RFC 6890 set up and RFC 8190
// updated, as they stood when this table was written (2026-12): the
// block, its name, the RFC that asked for it and its Globally Reachable
// value. A row is changed only to follow the registries; the destination
// policy reads the most specific row that holds an address
// (specialRangeOf), and TestEverySpecialPurposeRange checks each one.
var specialPurpose = []specialRange{
	// IPv4.
	{pfx("0.0.0.0/8"), "this network", "RFC 791", reachNo},
	{pfx("0.0.0.0/32"), "this host on this network", "RFC 1122", reachNo},
	{pfx("10.0.0.0/8"), "private-use", "RFC 1918", reachNo},
	{pfx("100.64.0.0/10"), "shared address space", "RFC 6598", reachNo},
	{pfx("127.0.0.0/8"), "loopback", "RFC 1122", reachNo},
	{pfx("169.254.0.0/16"), "link-local", "RFC 3927", reachNo},
	{pfx("172.16.0.0/12"), "private-use", "RFC 1918", reachNo},
	{pfx("192.0.0.0/24"), "IETF protocol assignments", "RFC 6890", reachNo},
	{pfx("192.0.0.0/29"), "IPv4 service continuity prefix", "RFC 7335", reachNo},
	{pfx("192.0.0.8/32"), "IPv4 dummy address", "RFC 7600", reachNo},
	{pfx("192.0.0.9/32"), "Port Control Protocol anycast", "RFC 7723", reachYes},
	{pfx("192.0.0.10/32"), "TURN anycast", "RFC 8155", reachYes},
	{pfx("192.0.0.170/32"), "NAT64/DNS64 discovery", "RFC 7050", reachNo},
	{pfx("192.0.0.171/32"), "NAT64/DNS64 discovery", "RFC 7050", reachNo},
	{pfx("192.0.2.0/24"), "documentation (TEST-NET-1)", "RFC 5737", reachNo},
	{pfx("192.31.196.0/24"), "AS112-v4", "RFC 7535", reachYes},
	{pfx("192.52.193.0/24"), "AMT", "RFC 7450", reachYes},
	{pfx("192.88.99.0/24"), "deprecated 6to4 relay anycast", "RFC 7526", reachNA},
	{pfx("192.168.0.0/16"), "private-use", "RFC 1918", reachNo},
	{pfx("192.175.48.0/24"), "direct delegation AS112 service", "RFC 7534", reachYes},
	{pfx("198.18.0.0/15"), "benchmarking", "RFC 2544", reachNo},
	{pfx("198.51.100.0/24"), "documentation (TEST-NET-2)", "RFC 5737", reachNo},
	{pfx("203.0.113.0/24"), "documentation (TEST-NET-3)", "RFC 5737", reachNo},
	{pfx("240.0.0.0/4"), "reserved", "RFC 1112", reachNo},
	{pfx("255.255.255.255/32"), "limited broadcast", "RFC 8190", reachNo},

	// IPv6.
	{pfx("::1/128"), "loopback", "RFC 4291", reachNo},
	{pfx("::/128"), "unspecified", "RFC 4291", reachNo},
	{pfx("::ffff:0:0/96"), "IPv4-mapped", "RFC 4291", reachNo},
	{pfx("64:ff9b::/96"), "IPv4-IPv6 translation", "RFC 6052", reachYes},
	{pfx("64:ff9b:1::/48"), "local-use IPv4/IPv6 translation", "RFC 8215", reachNo},
	{pfx("100::/64"), "discard-only", "RFC 6666", reachNo},
	{pfx("100:0:0:1::/64"), "dummy IPv6 prefix", "RFC 9780", reachNo},
	{pfx("2001::/23"), "IETF protocol assignments", "RFC 2928", reachNo},
	{pfx("2001::/32"), "Teredo", "RFC 4380", reachNA},
	{pfx("2001:1::1/128"), "Port Control Protocol anycast", "RFC 7723", reachYes},
	{pfx("2001:1::2/128"), "TURN anycast", "RFC 8155", reachYes},
	{pfx("2001:1::3/128"), "DNS-SD service registration protocol anycast", "RFC 9665", reachYes},
	{pfx("2001:2::/48"), "benchmarking", "RFC 5180", reachNo},
	{pfx("2001:3::/32"), "AMT", "RFC 7450", reachYes},
	{pfx("2001:4:112::/48"), "AS112-v6", "RFC 7535", reachYes},
	{pfx("2001:10::/28"), "deprecated (previously ORCHID)", "RFC 4843", reachNA},
	{pfx("2001:20::/28"), "ORCHIDv2", "RFC 7343", reachYes},
	{pfx("2001:30::/28"), "drone remote ID protocol entity tags", "RFC 9374", reachYes},
	{pfx("2001:db8::/32"), "documentation", "RFC 3849", reachNo},
	{pfx("2002::/16"), "6to4", "RFC 3056", reachNA},
	{pfx("2620:4f:8000::/48"), "direct delegation AS112 service", "RFC 7534", reachYes},
	{pfx("3fff::/20"), "documentation", "RFC 9637", reachNo},
	{pfx("5f00::/16"), "segment routing (SRv6) SIDs", "RFC 9602", reachNo},
	{pfx("fc00::/7"), "unique-local", "RFC 4193", reachNo},
	{pfx("fe80::/10"), "link-local unicast", "RFC 4291", reachNo},
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// specialRangeOf is the most specific registry row holding ip, if any.
// The table is short, and only dials read it.
func specialRangeOf(ip netip.Addr) (specialRange, bool) {
	var best specialRange
	found := false
	for _, r := range specialPurpose {
		if r.prefix.Contains(ip) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}
