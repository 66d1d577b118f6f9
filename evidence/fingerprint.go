package evidence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Fingerprint condenses the settings a verdict depends on into a short
// string for Config.Fingerprint and InvalidatePolicy. Parts are length
// prefixed before hashing, so ("ab", "c") and ("a", "bc") differ. Order
// matters: pass the parts in a fixed order.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
