// Package api declares the bodies of hostguard's JSON API: what a client
// sends to the daemon and what the daemon answers, with the field names
// and omissions the wire has. The daemon (package server) encodes and
// decodes these types, the command line and package client decode and
// encode the same ones, so the three cannot drift apart; a test checks
// them against the OpenAPI document the daemon serves.
//
// Where a library package already answers with a type of its own that
// carries the wire's JSON form (retry.Item, retry.Lease, ...), the name
// here is an alias of it rather than a copy: a Go program holds the same
// value whether it runs the scheduler in process or asks a daemon.
//
// Request types mark the fields a caller may leave out with omitempty; the
// daemon reads a missing field and its zero value alike, except where a
// pointer field says that missing is an error (ClaimRequest.N).
//
// docs/api.md describes every route; this package only names its bodies.
package api
