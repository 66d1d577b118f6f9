package fleet

import (
	"slices"
	"sort"
	"time"
)

// Summary is the figures the report shows for one run.
type Summary struct {
	Policy   string
	Wall     time.Duration
	Complete bool
	// MeanFinish is the workers' mean time to finish their sessions. Unlike
	// Wall, which is the slowest worker's, every worker's waiting counts.
	MeanFinish time.Duration
	// Requests is the workload's size; Sent went to the network.
	Requests, Sent int
	// SentToDown counts requests sent while their host was down.
	SentToDown int
	// Probes counts the probes the policy sent on its own.
	Probes int64
	// Blocked is worker time spent in fan-outs that waited on a down host.
	Blocked time.Duration
	// FalseRefusals counts requests refused while their host was up, by
	// the host's kind.
	FalseRefusals map[Kind]int
	// PatientRefusals counts refused requests to hosts that are never
	// down and answer within every client's patience (their latency is
	// below the shortest): refusals no give-up or outage can excuse.
	PatientRefusals int
	// SlowAfterAnswer counts refused requests to slow hosts that started
	// after some request to the same host had been answered: refusals
	// of a host seen answering, which impatient clients must not cause.
	SlowAfterAnswer int
	// DeadFanOuts holds, for each dead host refused during the run, how
	// many fan-outs (each one piece of evidence) reached it before its
	// first refusal: 2 is a trip on the second give-up.
	DeadFanOuts []int
	// Recoveries holds, for each end of a flapping host's outage inside
	// the run, the time until a request to it next completed with an
	// answer. Missed counts ends after which no request got an answer
	// before the next outage or the end of the run.
	Recoveries []time.Duration
	Missed     int
	// OutageWaste holds, for each hanging outage of a flapping host, how
	// long at least one request was waiting on it (the union of their
	// spans, not their sum).
	OutageWaste []time.Duration
	// DeadWaste is the same union over the whole run for each dead host.
	DeadWaste []time.Duration
}

// Summarize computes a run's figures against its plan.
func Summarize(p *Plan, r *Result) Summary {
	s := Summary{Policy: r.Policy, Wall: r.Wall, Complete: r.Complete, Requests: p.Requests(), Probes: r.Probes, FalseRefusals: map[Kind]int{}}
	for _, f := range r.Finish {
		s.MeanFinish += f / time.Duration(len(r.Finish))
	}
	perHost := make([][]Request, len(p.Hosts))
	for _, q := range r.Requests {
		perHost[q.Host] = append(perHost[q.Host], q)
		switch {
		case q.Refused && q.Up:
			s.FalseRefusals[p.Hosts[q.Host].Kind]++
			if h := p.Hosts[q.Host]; len(h.Schedule) == 0 && h.Latency < shortestPatience(p) {
				s.PatientRefusals++
			}
		case q.Sent():
			s.Sent++
			if !q.Up {
				s.SentToDown++
			}
		}
	}
	for _, f := range r.FanOuts {
		if f.Down {
			s.Blocked += f.Dur
		}
	}
	for h, spec := range p.Hosts {
		reqs := perHost[h]
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].Start < reqs[j].Start })
		switch spec.Kind {
		case Slow:
			s.SlowAfterAnswer += refusedAfterAnswer(reqs)
		case Dead:
			s.DeadWaste = append(s.DeadWaste, waiting(reqs, 0, r.Wall))
			if n, ok := fanOutsBeforeRefusal(r.FanOuts, reqs, h); ok {
				s.DeadFanOuts = append(s.DeadFanOuts, n)
			}
		case Flapping:
			for i, o := range spec.Schedule {
				if o.From >= r.Wall {
					break
				}
				if o.Hang {
					s.OutageWaste = append(s.OutageWaste, waiting(reqs, o.From, min(o.To, r.Wall)))
				}
				if o.To >= r.Wall {
					continue
				}
				next := r.Wall
				if i+1 < len(spec.Schedule) {
					next = min(next, spec.Schedule[i+1].From)
				}
				if d, ok := recovery(reqs, o.To, next); ok {
					s.Recoveries = append(s.Recoveries, d)
				} else {
					s.Missed++
				}
			}
		}
	}
	return s
}

// shortestPatience is the shortest wait of any worker: its own deadline,
// or the plan's Timeout.
func shortestPatience(p *Plan) time.Duration {
	least := p.Config.Timeout
	for _, d := range p.Patience {
		if d > 0 && d < least {
			least = d
		}
	}
	return least
}

// refusedAfterAnswer counts the requests (sorted by start) refused after
// the first answer to any of them had arrived.
func refusedAfterAnswer(reqs []Request) int {
	first := time.Duration(-1)
	for _, q := range reqs {
		if end := q.Start + q.Dur; q.Status != 0 && (first < 0 || end < first) {
			first = end
		}
	}
	n := 0
	for _, q := range reqs {
		if first >= 0 && q.Refused && q.Start > first {
			n++
		}
	}
	return n
}

// fanOutsBeforeRefusal counts the fan-outs to host that started before
// its first refused request (reqs, sorted by start) and sent anything.
func fanOutsBeforeRefusal(fans []FanOut, reqs []Request, host int) (int, bool) {
	first := time.Duration(-1)
	for _, q := range reqs {
		if q.Refused {
			first = q.Start
			break
		}
	}
	if first < 0 {
		return 0, false
	}
	n := 0
	for _, f := range fans {
		if f.Host == host && f.Start < first && f.Down {
			n++
		}
	}
	return n, true
}

// waiting is the union of the spans of requests sent to a down host that
// started within [from, to).
func waiting(reqs []Request, from, to time.Duration) time.Duration {
	var total, end time.Duration
	for _, q := range reqs { // sorted by start
		if q.Start < from || q.Start >= to || !q.Sent() || q.Up {
			continue
		}
		qs, qe := q.Start, q.Start+q.Dur
		if qs < end {
			qs = end
		}
		if qe > qs {
			total += qe - qs
			end = qe
		}
	}
	return total
}

// recovery is the time from up until the first answer to a request sent
// while the host was up, among requests started before next.
func recovery(reqs []Request, up, next time.Duration) (time.Duration, bool) {
	best := time.Duration(-1)
	for _, q := range reqs {
		if q.Start < up || q.Start >= next || q.Status == 0 {
			continue
		}
		if d := q.Start + q.Dur - up; best < 0 || d < best {
			best = d
		}
	}
	return best, best >= 0
}

// Quantile returns the q-quantile (0..1) of ds by nearest rank; 0 for none.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}
