package server

import (
	"errors"
	"net/url"

	"github.com/hostguard/hostguard/server/internal/netpolicy"
)

// precheckURL is the destination policy's precheck for the fetch route's
// url.
func (s *Server) precheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	return s.precheckTarget("url", u)
}

// precheckTarget is the destination policy's precheck for an absolute
// URL.
func (s *Server) precheckTarget(field string, u *url.URL) error {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return s.precheck(field, u.Hostname(), port)
}

// precheck is the dialer's precheck of host and port; field names where
// the destination came from in a zone's 400: the fetch route's url
// parameter, or "" for the proxy's request line.
func (s *Server) precheck(field, host, port string) error {
	err := s.dialer.Precheck(host, port)
	if !errors.Is(err, netpolicy.ErrZone) {
		return err
	}
	if field == "" {
		return badRequest("", "an IPv6 zone is not accepted in a destination")
	}
	return badRequest(field, "%s: an IPv6 zone is not accepted in a destination", field)
}
