package newznab

import (
	"net/url"
	"strings"
)

// maxIDLen bounds an item's identity. Longer identities are skipped: no
// indexer needs one, and a hostile feed must not make ids enormous.
const maxIDLen = 2048

// Reasons an item is skipped (Skip.Reason, feed.Item.Skip).
const (
	// SkipNoIdentity: the item has no guid, no link and no enclosure URL.
	SkipNoIdentity = "no guid, link or enclosure URL"
	// SkipLongIdentity: the item's identity is longer than 2048 bytes.
	SkipLongIdentity = "identity longer than 2048 bytes"
)

// keyParams are query parameters that carry an account's secret in the
// links indexers and their proxies write: Newznab's apikey, NZBGeek-style
// r, Jackett's jackett_apikey, tracker passkeys and tokens.
var keyParams = map[string]bool{
	"apikey": true, "api_key": true, "api-key": true, "jackett_apikey": true, "key": true,
	"r": true, "passkey": true, "pass_key": true, "torrent_pass": true, "authkey": true,
	"auth": true, "token": true, "access_token": true, "sid": true,
}

// identity is an item's id: its guid, else its link, else its enclosure
// URL, with the account's key masked wherever it appears and the values of
// key-carrying query parameters masked too (links carry the key, and a
// Torznab proxy's guid is often such a link). Masking rather than dropping
// the parameter keeps two links that differ only in other parameters
// apart. reason is set when the item cannot be identified.
func identity(key string, candidates ...string) (id, reason string) {
	for _, c := range candidates {
		if c = strings.TrimSpace(c); c != "" {
			id = maskKey(maskQuery(c), key)
			break
		}
	}
	switch {
	case id == "":
		return "", SkipNoIdentity
	case len(id) > maxIDLen:
		return "", SkipLongIdentity
	}
	return id, ""
}

// maskQuery replaces the values of key-carrying parameters in a URL's query
// with "[key]", leaving everything else byte for byte as it was, and drops
// userinfo. A string that is not a URL with a query is returned as it is.
func maskQuery(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	if u.User != nil {
		u.User = nil
		s = u.String()
		if u, err = url.Parse(s); err != nil {
			return s
		}
	}
	if u.RawQuery == "" {
		return s
	}
	parts := strings.Split(u.RawQuery, "&")
	changed := false
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasValue && keyParams[strings.ToLower(name)] {
			parts[i] = p[:strings.IndexByte(p, '=')+1] + "[key]"
			changed = true
		}
	}
	if !changed {
		return s
	}
	q := strings.Index(s, "?")
	end := len(s)
	if f := strings.Index(s[q:], "#"); f >= 0 {
		end = q + f
	}
	return s[:q+1] + strings.Join(parts, "&") + s[end:]
}
