package server

import (
	"errors"
	"net/http"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server/internal/proxystatus"
)

// markDaemonAnswer fills in e's Proxy-Status error type and details from
// err, unless its handler already chose them, and the fast_fail field.
func markDaemonAnswer(err error, e *apiError) {
	if open, ok := errors.AsType[*guard.OpenError](err); ok {
		e.FastFail = true
		if e.ProxyStatus == "" {
			e.ProxyStatus = "destination_unavailable"
			e.psDetails = "endpoint " + open.Endpoint + " is not answering; hostguard did not contact it"
		}
		return
	}
	if e.ProxyStatus != "" {
		return
	}
	if pol, ok := errors.AsType[*failure.PolicyError](err); ok {
		e.ProxyStatus = "destination_ip_prohibited"
		e.psDetails = "refused by the destination policy: " + pol.Reason
		return
	}
	if up, ok := errors.AsType[*upstreamError](err); ok {
		e.ProxyStatus, e.psDetails = proxystatus.Upstream(up.err)
		return
	}
	switch {
	case e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge:
		e.ProxyStatus = "http_request_error"
	case e.Status == http.StatusInternalServerError:
		e.ProxyStatus = "proxy_internal_error"
	case e.Status >= 400 && e.Status < 500:
		e.ProxyStatus = "http_request_denied"
	default:
		e.ProxyStatus = "proxy_internal_response"
	}
}
