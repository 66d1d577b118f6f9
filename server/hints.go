package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The per-request hints a client may send to the proxy. They are the
// daemon's, never the upstream's: forwarding strips them.
const (
	hintTimeout = "Hostguard-Timeout"
	hintExempt  = "Hostguard-Exempt"
)

// maxHintTimeout bounds Hostguard-Timeout (and fetch's timeout=): a wait
// longer than ten minutes for headers is a mistake, not a slow host.
const maxHintTimeout = 600 * time.Second

// hints are one request's own guard settings.
type hints struct {
	timeout time.Duration // this request's header timeout; 0: Config.HeaderTimeout
	exempt  bool          // the discovery exemption: never refused, failures never count
}

// headerHints reads the Hostguard-* request headers. A malformed hint is
// a 400 naming the header, checked before the guard is asked, so it
// changes nothing.
func headerHints(h http.Header) (hints, error) {
	var out hints
	if vv, ok := h[hintTimeout]; ok {
		if len(vv) != 1 {
			return out, hintError(hintTimeout, "%s is given more than once", hintTimeout)
		}
		d, err := hintSeconds(hintTimeout, vv[0])
		if err != nil {
			return out, err
		}
		out.timeout = d
	}
	if vv, ok := h[hintExempt]; ok {
		if len(vv) != 1 {
			return out, hintError(hintExempt, "%s is given more than once", hintExempt)
		}
		b, err := hintBool(hintExempt, vv[0])
		if err != nil {
			return out, err
		}
		out.exempt = b
	}
	return out, nil
}

// stripHints removes the hints from headers about to be forwarded.
func stripHints(h http.Header) {
	delete(h, hintTimeout)
	delete(h, hintExempt)
}

// hintSeconds parses decimal seconds, 0 < t <= 600. Only digits and one
// point are accepted: ParseFloat alone would also take "inf", "1e3" and
// hexadecimal.
func hintSeconds(field, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	bad := v == "" || strings.Count(v, ".") > 1 || v == "."
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' {
			bad = true
		}
	}
	var f float64
	if !bad {
		var err error
		f, err = strconv.ParseFloat(v, 64)
		bad = err != nil
	}
	if bad || f <= 0 || f > maxHintTimeout.Seconds() {
		return 0, hintError(field, "%s must be a number of seconds above 0 and at most %d, such as 2.5", field, int(maxHintTimeout.Seconds()))
	}
	d := time.Duration(f * float64(time.Second))
	if d <= 0 {
		d = time.Nanosecond
	}
	return d, nil
}

func hintBool(field, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, hintError(field, "%s must be 1, true, 0 or false", field)
}

// hintError is a malformed hint: 400, naming the header (or the fetch
// parameter) in field.
func hintError(field, format string, args ...any) *apiError {
	e := badRequest(field, format, args...)
	e.ProxyStatus = "http_request_error"
	return e
}
