package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
)

// maxURLLen bounds a URL in a request body or query. Real URLs are far
// shorter; a longer one is a mistake or an attempt to fill memory.
const maxURLLen = 8 << 10

// guardExtend renews a remote ticket's lease. It takes no body.
func (s *Server) guardExtend(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := checkTicketID(id); err != nil {
		return err
	}
	ep, expires, ok := s.tickets.extend(id)
	if !ok {
		return notFound("ticket", "unknown ticket: never issued, already reported, or its lease ended")
	}
	writeJSON(w, http.StatusOK, api.TicketExtension{Ticket: id, Endpoint: ep, ExpiresAt: expires.UTC(), LeaseSeconds: s.cfg.TicketLease.Seconds()})
	return nil
}

// checkTicketID refuses what no ticket id can be, so that a path with
// odd bytes answers 400 rather than 404.
func checkTicketID(id string) error {
	if id == "" || len(id) > 64 {
		return badRequest("ticket", "ticket id must be 1 to 64 characters")
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return badRequest("ticket", "ticket id must be lowercase hexadecimal, as acquire returned it")
		}
	}
	return nil
}

func (s *Server) guardAcquire(w http.ResponseWriter, r *http.Request) error {
	var req api.AcquireRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := checkURLField("url", req.URL); err != nil {
		return err
	}
	t, err := s.acquire(r.Context(), req.URL, hints{exempt: req.Exempt})
	if err != nil {
		return s.guardError(err, "acquire")
	}
	id, expires, ok := s.tickets.add(t, ticketClient(r))
	if !ok {
		t.Release()
		return &apiError{Status: http.StatusTooManyRequests, RetryAfter: time.Second,
			Message: fmt.Sprintf("server: too many remote tickets are out (at most %d, %d per client); report some before acquiring more",
				s.cfg.MaxTickets, s.tickets.perClient())}
	}
	writeJSON(w, http.StatusOK, api.Ticket{
		Ticket: id, Endpoint: t.Endpoint(), Trial: t.Trial(), Exempt: req.Exempt,
		ExpiresAt: expires.UTC(), LeaseSeconds: s.cfg.TicketLease.Seconds(),
		Extend: "/v1/guard/tickets/" + id + "/extend",
	})
	return nil
}

// guardError counts a fast-fail of an Acquire and passes err on: an open
// endpoint answers 503, a URL the guard cannot key 400.
func (s *Server) guardError(err error, via string) error {
	if errors.Is(err, guard.ErrOpen) {
		s.metrics.fastFails.WithLabelValues(via).Inc()
	}
	return blame("url", err)
}

// checkURLField does the checks common to every URL the API takes. The
// guard says what else is wrong with it; neither message repeats the URL.
func checkURLField(field, u string) error {
	switch {
	case strings.TrimSpace(u) == "":
		return badRequest(field, "%s is missing", field)
	case len(u) > maxURLLen:
		return badRequest(field, "%s is longer than %d bytes", field, maxURLLen)
	}
	if _, err := guard.Key(u); err != nil {
		return blame(field, err)
	}
	return nil
}

func (s *Server) guardReport(w http.ResponseWriter, r *http.Request) error {
	var req api.ReportRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	// Everything is checked before the ticket is taken, so a bad report
	// leaves the ticket as it was for a corrected one.
	if req.Ticket == "" {
		return badRequest("ticket", "ticket is missing")
	}
	class, err := reportClass(req.Outcome, req.ErrorClass)
	if err != nil {
		return err
	}
	t, ok := s.tickets.take(req.Ticket)
	if !ok {
		return notFound("ticket", "unknown ticket: never issued, already reported, or its lease ended")
	}
	switch req.Outcome {
	case "answered":
		t.Answered()
	case "failed":
		t.Failed(errorForClass(class))
	default:
		t.Release()
	}
	ep := t.Endpoint()
	writeJSON(w, http.StatusOK, api.ReportResult{Endpoint: ep, State: s.guard.State(ep).String()})
	return nil
}

// reportClass checks a report's outcome and error class, and returns the
// class a failed outcome counts as.
func reportClass(outcome, errorClass string) (failure.Class, error) {
	switch outcome {
	case "answered", "inconclusive":
		if errorClass != "" {
			return failure.None, badRequest("error_class", "error_class goes only with outcome \"failed\"")
		}
		return failure.None, nil
	case "failed":
		if errorClass == "" {
			return failure.Timeout, nil
		}
		c, ok := classByName[errorClass]
		if !ok {
			return failure.None, badRequest("error_class", "unknown error_class %q; want one of %s", errorClass, classNames())
		}
		return c, nil
	case "":
		return failure.None, badRequest("outcome", "outcome is missing; want answered, failed or inconclusive")
	}
	return failure.None, badRequest("outcome", "unknown outcome %q; want answered, failed or inconclusive", outcome)
}

// guardReset reads only the origin of the URL, and logs only that: callers
// reset precisely when an address changed, and the rest of it may carry
// credentials.
func (s *Server) guardReset(w http.ResponseWriter, r *http.Request) error {
	var req api.ResetRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := checkURLField("url", req.URL); err != nil {
		return err
	}
	// The guard keys any scheme, but only http and https URLs are ever
	// guarded: resetting another would create a record nothing uses.
	if u, err := url.Parse(req.URL); err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return badRequest("url", "url must be an http or https URL")
	}
	if err := s.guard.Reset(req.URL); err != nil {
		return blame("url", err)
	}
	// The guard's key is the origin: scheme, host and port, never a
	// user, a path or a query.
	key, _ := guard.Key(req.URL)
	s.log.Info("server: guard endpoint reset", "endpoint", key)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// guardResetAll resets every endpoint at once (guard.Guard.ResetAll):
// cooldowns and streaks are cleared, and reports of tickets acquired
// before it count for nothing. It takes no body.
func (s *Server) guardResetAll(w http.ResponseWriter, _ *http.Request) error {
	s.guard.ResetAll()
	s.log.Info("server: every guard endpoint reset")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// classByName maps the labels a client may send as error_class to classes.
var classByName = func() map[string]failure.Class {
	m := make(map[string]failure.Class)
	for _, c := range failure.Classes() {
		if c != failure.None {
			m[c.String()] = c
		}
	}
	return m
}()

func classNames() string {
	names := make([]string, 0, len(classByName))
	for n := range classByName {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// errorForClass builds an error that failure.Classify puts in class c, so
// that a failure reported over the API goes through the same rules as one
// the daemon saw itself (a reset or a TLS error does not count, a refusal
// does). The errors have the real types a socket would produce.
func errorForClass(c failure.Class) error {
	var err error
	switch c {
	case failure.Timeout:
		err = context.DeadlineExceeded
	case failure.DNSNotFound:
		err = &net.DNSError{Err: "no such host", IsNotFound: true}
	case failure.DNSTemporary:
		err = &net.DNSError{Err: "temporary failure", IsTemporary: true}
	case failure.Refused:
		err = dialErr(syscall.ECONNREFUSED)
	case failure.HostUnreachable:
		err = dialErr(syscall.EHOSTUNREACH)
	case failure.NetworkUnreachable:
		err = dialErr(syscall.ENETUNREACH)
	case failure.Aborted:
		err = dialErr(syscall.ECONNABORTED)
	case failure.Reset:
		err = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case failure.Canceled:
		err = context.Canceled
	case failure.TLS:
		err = tls.AlertError(40) // handshake_failure
	case failure.Policy:
		err = &failure.PolicyError{Reason: "refused by the client's policy"}
	default:
		err = errors.New("unrecognised failure")
	}
	return fmt.Errorf("server: failure reported by a client: %w", err)
}

func dialErr(errno syscall.Errno) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
}

func newEndpointView(st guard.EndpointStatus) api.Endpoint {
	v := api.Endpoint{
		Endpoint: st.Endpoint, State: st.State.String(), Failures: st.Failures,
		RetryAfterSeconds: st.RetryAfter.Seconds(), TicketsOut: st.TicketsOut, TrialOut: st.TrialOut,
		LastFailureAt: st.LastFailureAt.UTC(),
	}
	if st.State != guard.Closed && !st.OpenUntil.IsZero() {
		v.OpenUntil = st.OpenUntil.UTC()
	}
	if st.LastFailure != failure.None {
		v.LastFailure = st.LastFailure.String()
	}
	return v
}

// endpoints returns the guard's records in endpoint order, keeping those
// whose state passes keep.
func (s *Server) endpoints(keep func(guard.State) bool) []api.Endpoint {
	all := s.guard.Endpoints()
	out := make([]api.Endpoint, 0, len(all))
	for _, st := range all {
		if keep == nil || keep(st.State) {
			out = append(out, newEndpointView(st))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint < out[j].Endpoint })
	return out
}

func (s *Server) guardList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for k := range q {
		if k != "state" {
			return badRequest(k, "unknown query parameter %q; want state", k)
		}
	}
	var keep func(guard.State) bool
	if want := q.Get("state"); want != "" {
		switch want {
		case guard.Closed.String(), guard.Open.String(), guard.HalfOpen.String():
		default:
			return badRequest("state", "unknown state %q; want closed, open or half-open", want)
		}
		keep = func(st guard.State) bool { return st.String() == want }
	}
	writeJSON(w, http.StatusOK, api.EndpointList{Endpoints: s.endpoints(keep)})
	return nil
}
