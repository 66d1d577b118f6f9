// Package newznab is a client for the Newznab and Torznab indexer APIs, and
// a feed.Source over their recent-release listing. It reads what real
// indexers and the proxies in front of them (Prowlarr, Jackett,
// NZBHydra2) send, not only what the specifications say.
//
// Client.Caps reads t=caps: the page-size limits, and the API limits the
// indexer reports about the account where it does. Client.Search runs
// t=search; with an empty query it lists the newest releases, which is what
// Client.Page serves to a feed.Syncer, page by page (offset and limit, the
// limit never above the indexer's maximum).
//
// # Items
//
// Results are RSS with newznab:attr or torznab:attr elements (feeds that
// send every attribute both ways are read as sending it once). Each
// attribute has one value: the same value sent twice is one value, and a
// different second value is dropped and recorded in Page.Conflicts; only
// category and tag are sets, de-duplicated and joined by commas. Size is
// the size attribute, else the size element, else the enclosure's length.
//
// An item's identity (feed.Item.ID) is its guid attribute or <guid>
// element, else its <link>, else its enclosure URL, with the account's key
// masked as "[key]" wherever it appears and the values of key-carrying
// query parameters (apikey, r, jackett_apikey, passkey, token, ...) masked
// too. An item with none of these is skipped: Search lists it in
// Page.Skipped with the reason, and Page returns it as a placeholder (an
// empty ID, feed.Item.Skip set) so that the Syncer counts offsets right
// and reports it in feed.Result.Skipped. Nothing is dropped without a
// trace. The download link, key and all, is Item.Attrs["link"]: do not
// log Attrs.
//
// Publish dates are read leniently: RFC 1123 and RFC 822 with or without
// the weekday (a wrong or localised weekday name is ignored), two-digit
// years, RFC 850 and ANSI C forms, ISO 8601 with a 'T' or a space, numeric
// zones and the common zone names; a date without a zone is UTC. A date
// that is present but unreadable leaves Published zero and is counted in
// Page.BadDates.
//
// # Errors
//
// An error document, <error code=".." description=".."/> or the same in
// JSON as some proxies answer, is read whatever the HTTP status it came
// with, and becomes an *Error carrying the code, the description (key
// masked), the HTTP status and Until, when the indexer says it will serve
// again (the Retry-After header, seconds or an HTTP date, else the time in
// "disabled till <time>"). It matches one condition:
//
//   - ErrBadCredentials: codes 100-199.
//   - ErrDisabled: code 910, or a description saying "disabled" (Prowlarr's
//     410 "Indexer is disabled", 429 "Indexer is disabled till ...").
//   - ErrDownloadLimit: code 501, or "grab limit" / "download limit".
//   - ErrAPILimit: code 500 or 429, or "request limit", "API limit",
//     "query limit", "limit reached", "too many requests" (Prowlarr's
//     "User configurable Indexer Query Limit of 100 ... reached").
//   - ErrRequest: codes 200-299.
//   - ErrUnknown: anything else.
//
// ErrAPILimit, and ErrDisabled with an Until time, are temporary refusals:
// they also match feed.ErrSourceExhausted, so that a Syncer stops cleanly
// and keeps what it read, and Error implements feed.RetryAter, so that a
// Loop asks again at Until. An HTTP error status without a document is a
// *StatusError (a 429 also matches feed.ErrSourceExhausted). Bad input to
// New or Search is an *InputError matching ErrInvalid.
//
// When Config.Budget is set, the client reports the indexer's own daily
// limit to it and, when the indexer says the day's limit is reached
// without saying until when, marks the source exhausted for the rest of
// the day.
//
// # Keys
//
// The API key travels only in the request's query. It never appears in an
// error the client returns (errors name the indexer by scheme, host and
// path, and any echo of the key is masked), and the guarded transport keys
// its breaker by origin, which never includes the query.
package newznab
