package transport

import (
	"net/url"
	"sync"
	"sync/atomic"
)

// maxCachedOrigins bounds the origin strings a Transport keeps; past it,
// new hosts are joined per request as if there were no cache.
const maxCachedOrigins = 4096

// origins remembers "scheme://host" per host for http and https, so that a
// request to a host seen before builds no string for the guard: the one
// allocation the join would cost per request.
type origins struct {
	byScheme [2]sync.Map // host -> origin, for http and for https
	n        atomic.Int64
}

func (o *origins) of(u *url.URL) string {
	i := -1
	switch u.Scheme {
	case "http":
		i = 0
	case "https":
		i = 1
	}
	if i < 0 {
		return u.Scheme + "://" + u.Host
	}
	if v, ok := o.byScheme[i].Load(u.Host); ok {
		return v.(string)
	}
	s := u.Scheme + "://" + u.Host
	if o.n.Load() < maxCachedOrigins {
		if _, loaded := o.byScheme[i].LoadOrStore(s[len(u.Scheme)+3:], s); !loaded {
			o.n.Add(1)
		}
	}
	return s
}
