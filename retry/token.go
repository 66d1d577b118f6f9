package retry

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
)

// A lease token is a secret of tokenBytes random bytes from crypto/rand in
// lower-case hex, drawn for each lease and kept with the item. A holder
// proves its lease by presenting it; nobody can guess another worker's
// token, and a token of another item or of an earlier lease never matches.
// The order of leases (fencing) is Lease.Term, a separate counter.
// Callers treat tokens as opaque strings.
const (
	tokenBytes = 16
	tokenLen   = 2 * tokenBytes
)

// newTokens draws n tokens with one read of the system's random source.
func newTokens(n int) []string {
	b := make([]byte, n*tokenBytes)
	// crypto/rand.Read never fails on the platforms Go supports; it
	// crashes the program rather than return predictable bytes.
	_, _ = rand.Read(b)
	out := make([]string, n)
	for i := range out {
		out[i] = hex.EncodeToString(b[i*tokenBytes : (i+1)*tokenBytes])
	}
	return out
}

// checkToken accepts only the form newTokens produces, so that two
// spellings can never name one lease. Its error's Field is "lease".
func checkToken(tok string) error {
	ok := len(tok) == tokenLen
	for i := 0; ok && i < len(tok); i++ {
		c := tok[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
	}
	if !ok {
		return invalid("lease", "token %.40q is malformed (want the token Claim returned)", tok)
	}
	return nil
}

// tokenMatches compares a presented token with an item's in constant time,
// so that the time an answer takes says nothing about the secret. An item
// without a token (its lease predates tokens, or it was never leased)
// matches nothing.
func tokenMatches(stored, presented string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(stored), []byte(presented)) == 1
}
