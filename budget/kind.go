package budget

import "strings"

// Kind says what a request is for, and so which allowance pays for it.
type Kind string

// The kinds of work admission knows. Head polls, gap pages and title
// searches draw on their source's allowance; validation, candidate checks,
// descriptor grabs and bytes have cluster-wide allowances of their own;
// foreground work is recorded but never refused.
const (
	KindHeadPoll   Kind = "head_poll"
	KindGapPage    Kind = "gap_page"
	KindSearch     Kind = "search"
	KindValidation Kind = "validation"
	KindCandidate  Kind = "candidate"
	KindDescriptor Kind = "descriptor"
	KindBytes      Kind = "bytes"
	KindForeground Kind = "foreground"
)

// Counter kinds that are sums rather than kinds of work: the store keeps one
// counter per source for everything charged to the source's allowance, and
// one cluster-wide counter for the total allowance when the owner sets one.
const (
	CounterSource Kind = "source"
	CounterTotal  Kind = "total"
)

// Kinds lists every kind of work, in a stable order for reports.
var Kinds = []Kind{KindHeadPoll, KindGapPage, KindSearch, KindValidation, KindCandidate, KindDescriptor, KindBytes, KindForeground}

// ParseKind returns the kind named s (as written by Kind's string form,
// case-insensitive, surrounding space ignored).
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(strings.TrimSpace(s)))
	if k.valid() {
		return k, nil
	}
	return "", invalid("kind", "unknown kind %q; want one of head_poll, gap_page, search, validation, candidate, descriptor, bytes, foreground", clip(s))
}

func (k Kind) valid() bool {
	for _, v := range Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// FromSource reports whether k is paid from its source's allowance (head
// polls, gap pages and title searches).
func (k Kind) FromSource() bool {
	return k == KindHeadPoll || k == KindGapPage || k == KindSearch
}

// reservation reports whether grants of k are reservations that must be
// settled or released, and so are stored durably with an id.
func (k Kind) reservation() bool { return k == KindBytes }
