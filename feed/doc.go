// Package feed follows newest-first paginated feeds (a Newznab or Torznab
// recent-release listing, a site's "latest" page) at the smallest number of
// requests that misses nothing.
//
// A Source serves pages by item offset, newest item first. A Syncer remembers,
// per feed name, the newest item it has seen (the head) and any stretch of
// the feed it has not yet read (a gap). Sync reads the head page and walks
// down only until it meets the previous head: one page in the steady state.
// After a burst, it walks at most Config.MaxPages pages; what is left becomes
// a gap, stored durably and resumed by the next Sync or Resume. A feed's
// first sync reads the head page only (plus Config.CatchUp older pages).
//
// Newest-first feeds shift while they are read: every new release pushes the
// older ones down by one offset. The Syncer therefore never trusts an offset
// on its own. It finds its place again by item id (and by publish time when
// an item was taken down), and it records the ids it has handed out, so that
// an item read twice is returned once and an item pushed across a page
// boundary is never lost.
//
// A source that cannot identify an item (no id at all) returns it as a
// placeholder: an Item with an empty ID and Skip saying why. It holds its
// place in the page, so that offsets stay right and a page of them is not
// taken for the end of the feed; it is never handed out, and
// Result.Skipped counts it by reason.
//
// Every page request first passes an Admitter (usually a budget): the head
// page as a head poll, the rest as gap pages. A refusal ends the sync
// cleanly with what was read so far saved; so does a source's answer that
// its own request limit is reached (ErrSourceExhausted), which the
// Admitter hears about too (a source error that implements RetryAter
// says when to ask again). A page request that fails otherwise ends the
// sync with its error and leaves the stored position exactly where it was;
// the items read before the failure are returned (and recorded as handed
// out, so the retry does not return them again).
//
// Loop runs the syncs of several feeds on the cluster's leader at each feed's
// poll interval, resumes open gaps in between, and reports per-feed status.
//
// The subpackage feed/newznab is a Source for Newznab and Torznab indexers.
package feed
