// Package newznab is a client for the Newznab and Torznab indexer APIs, and
// a feed.Source over their recent-release listing.
//
// Client.Caps reads t=caps: the page-size limits, and the API limits the
// indexer reports about the account where it does. Client.Search runs
// t=search; with an empty query it lists the newest releases, which is what
// Client.Page serves to a feed.Syncer, page by page (offset and limit, the
// limit never above the indexer's maximum). Results are RSS with
// newznab:attr or torznab:attr elements; each item becomes a feed.Item
// whose ID is the indexer's guid, whose Size is the size attribute (or the
// enclosure length), and whose Attrs hold every attribute present.
//
// Indexers answer errors with <error code=".." description=".."/>. The
// client turns them into *Error values that match ErrBadCredentials (codes
// 100-199), ErrAPILimit (500, or a "request limit reached" description),
// ErrDownloadLimit (501), ErrDisabled (910), ErrRequest (200-299) or
// ErrUnknown. ErrAPILimit also matches feed.ErrSourceExhausted. When
// Config.Budget is set, the client reports the indexer's own daily limit to
// it and marks the source exhausted for the rest of the day when the
// indexer says the limit is reached.
//
// The API key travels only in the request's query. It never appears in an
// error the client returns (errors name the indexer by scheme, host and
// path, and any echo of the key is masked), and the guarded transport keys
// its breaker by origin, which never includes the query. Download links in
// results carry the key, as indexers issue them; Item.Attrs["link"] is one,
// so do not log Attrs.
package newznab
