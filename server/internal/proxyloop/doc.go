// Package proxyloop is the inbound half of the forward proxy's own
// HTTP/1.1 engine: a connection loop that serves plain bodyless http://
// requests itself and hands every other connection to an http.Server.
//
// What the loop saves per request over http.Server is its shape: a
// goroutine and a read that would block, to notice a client that leaves
// while its request runs, and two layers of response buffering. Here a
// client is watched only once its request has run for 50 ms (an upstream
// that answers in time never pays for it), and an answer is one buffered
// write. A connection keeps its context, its client watch and the watch's
// timer across its requests.
//
// The loop takes a head only when http.Server would read the same request
// from the same bytes (plainHead; FuzzFastPathReadsLikeHTTPServer holds it
// to that), so the two paths never disagree on where a request ends.
// Anything else (CONNECT, an upload, HTTP/1.0, a head larger than the
// buffer) goes, with the bytes already read, to the server serving
// Handoff, and stays there for the connection's life.
//
// The seam is small on purpose: the loop is handed a handler, a base
// context and its limits (Options), and knows nothing of what the handler
// decides. What the daemon answers is the same on both paths because it is
// the same handler.
package proxyloop
