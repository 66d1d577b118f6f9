package retry

import "strconv"

// A lease token is the lease's generation number in decimal. Generations
// come from one counter per database, so a token is unique across items and
// a token presented with the wrong id is caught as stale, not accepted.
// Callers treat tokens as opaque strings.

func formatToken(gen int64) string { return strconv.FormatInt(gen, 10) }

// parseToken accepts only the canonical form formatToken produces, so that
// two spellings can never name one lease.
func parseToken(tok string) (int64, error) {
	gen, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || gen <= 0 || formatToken(gen) != tok {
		return 0, invalid("lease", "token %.40q is malformed (want the token Claim returned)", tok)
	}
	return gen, nil
}
