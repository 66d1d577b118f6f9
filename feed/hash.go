package feed

import (
	"crypto/sha256"
	"encoding/hex"
)

// IDHash is how an item id is kept: in the store's record of handed-out
// ids and in cursors (Status.Head.ID is IDHash of the head item's id).
// Ids can carry an account's key (Torznab proxies use download links as
// guids), so they are never stored in clear. It is the first 16 bytes of
// the id's SHA-256, in hex: collisions within one feed's ids are out of
// reach, and the stored rows stay small. The empty id stays empty.
func IDHash(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}
