// Package dashboard is the daemon's status page as a browser gets it: the
// page and the login form with their style and script, and the table of
// logins a browser holds instead of the API token.
//
// Each page is one document with its style (and script) inline, so it
// loads nothing from anywhere: its Content-Security-Policy allows exactly
// that style and script, by hash, requests to the daemon itself, and
// nothing else. The script fills the page from GET /v1/status and writes
// every figure and name with textContent, never as HTML: host names and
// endpoints come from clients.
//
// A browser cannot send a bearer header when it opens a page, so with a
// token the dashboard asks for it once and hands back a session cookie.
// The cookie holds a random id, never the token; Sessions keeps the ids,
// hashed, in memory, so a restart logs everyone out. Each session has a
// CSRF token, an HMAC of its id under a key drawn at start, which the page
// sends with every action. Which routes a session may use, and how, is the
// daemon's decision (server/login.go), not this package's.
package dashboard
