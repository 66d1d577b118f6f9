package server

import (
	"context"

	"github.com/hostguard/hostguard/failure"
)

// Results of a recovery probe, the values of the result label of
// hostguard_guard_probes_total.
const (
	probeAnswered     = "answered"     // any HTTP status: the endpoint closes
	probeFailed       = "failed"       // host-level: the endpoint opens again
	probeInconclusive = "inconclusive" // anything else: the next request is the trial
)

// probe is the guard's Probe: HEAD <endpoint>/ through the server's own
// base transport, whose dialer enforces the destination policy, so a probe
// reaches nothing the fetch route may not. A refusal by that policy is
// inconclusive. Probes are counted by result, never labelled with the
// endpoint.
func (s *Server) probe(ctx context.Context, endpoint string) error {
	err := s.probeFunc(ctx, endpoint)
	result := probeAnswered
	switch {
	case err == nil:
	case failure.Classify(err).HostLevel():
		result = probeFailed
	default:
		result = probeInconclusive
	}
	s.metrics.probes.WithLabelValues(result).Inc()
	return err
}
