// Package netpolicy is the daemon's destination policy: which addresses
// its upstream connections may reach, enforced by the one Dialer they all
// go through.
//
// The policy keeps the fetch route and the forward proxy from being used
// to reach the daemon's own machine or its private network (SSRF). It runs
// in the dialer's Control hook, after DNS resolution and before
// connect(2), for every address the dialer tries: a name that resolves to
// 10.0.0.1 is refused like the literal, and no packet is ever sent to a
// refused address. Dialer.Precheck refuses, before anything else runs,
// what the dial would refuse whatever DNS says (a literal, a localhost
// name), so that such a request leaves no record in the guard.
//
// The daemon's own listeners are refused always, even when private
// addresses are allowed: a request through one would come straight back
// in. OwnAddrs keeps those listeners and the host's interface addresses,
// re-read when the kernel says they changed (netlink on Linux) or, where
// it cannot say, at most every two seconds on use.
//
// It is a package of its own because it is a security boundary with its
// own tests (every row of the IANA special-purpose registries), and
// because the daemon's handlers need only its small surface: a dialer, a
// precheck and the address set.
package netpolicy
