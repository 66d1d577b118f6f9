package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Request is what happened to one request of a run. Offsets count from the
// run's start.
type Request struct {
	Worker, Host int
	Start, Dur   time.Duration
	Up           bool // the host was up, by its schedule, when the request started
	Refused      bool // the policy turned it away without network work
	Impatient    bool // sent with a deadline of its worker's own, shorter than the policy's
	Status       int  // the answer's status; 0 when there was none
	Err          error
}

// Sent reports whether the request went to the network.
func (r Request) Sent() bool { return !r.Refused }

// FanOut is what happened to one burst of parallel requests.
type FanOut struct {
	Worker, Host int
	Start, Dur   time.Duration
	// Down is true when at least one request of the burst was sent while
	// the host was down: the worker waited on a host that was not there.
	Down bool
}

// Result is one policy's run of a plan.
type Result struct {
	Policy   string
	Wall     time.Duration // start to the last worker's finish, or Limit
	Complete bool          // every worker finished within Limit
	// Finish is, for each worker, the time from the start to the end of
	// its last session (Limit if it did not finish).
	Finish   []time.Duration
	Requests []Request
	FanOuts  []FanOut
	// Probes counts the probes the policy sent on its own.
	Probes int64
}

// Run starts the plan's fleet, runs its workload through pol, and stops
// the fleet. It fails only when the fleet cannot be set up or torn down
// cleanly; a run that hits the plan's Limit returns with Complete false.
func Run(ctx context.Context, p *Plan, pol Policy) (*Result, error) {
	return RunTraced(ctx, p, pol, nil)
}

// RunTraced is Run writing what the policy's guards did to trace (nil:
// nothing), for the policies that trace (hostguard's).
func RunTraced(ctx context.Context, p *Plan, pol Policy, trace *Tracer) (*Result, error) {
	// Hosts come up before the clock starts, so a schedule offset of zero
	// is the moment the first request may be sent.
	start := time.Now().Add(20 * time.Millisecond)
	hosts := make([]*Host, 0, len(p.Hosts))
	closeAll := func() error {
		var errs []error
		for _, h := range hosts {
			errs = append(errs, h.Close())
		}
		return errors.Join(errs...)
	}
	byAddr := make(map[string]int, len(p.Hosts))
	for i, spec := range p.Hosts {
		h, err := StartHost(spec, start)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		hosts = append(hosts, h)
		byAddr[h.addr] = i
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	env := Env{
		Timeout: p.Config.Timeout,
		Base:    base,
		Up: func(hostport string) bool {
			i, ok := byAddr[hostport]
			return ok && p.Hosts[i].Schedule.Up(time.Since(start))
		},
	}
	env.Probes = new(atomic.Int64)
	env.Trace = trace
	trace.begin(pol.Name, start)
	client := pol.New(env)

	ctx, cancel := context.WithDeadline(ctx, start.Add(p.Config.Limit))
	defer cancel()
	time.Sleep(time.Until(start))

	type record struct {
		reqs []Request
		fans []FanOut
		done bool
		end  time.Duration
	}
	records := make([]record, len(p.Workers))
	var wg sync.WaitGroup
	for w, sessions := range p.Workers {
		var patience time.Duration
		if w < len(p.Patience) {
			patience = p.Patience[w]
		}
		wg.Go(func() {
			rec := &records[w]
			for _, s := range sessions {
				for _, width := range s.FanOuts {
					if ctx.Err() != nil {
						return
					}
					fan, reqs := fanOut(ctx, client, hosts[s.Host], start, w, s.Host, width, patience)
					rec.fans = append(rec.fans, fan)
					rec.reqs = append(rec.reqs, reqs...)
				}
			}
			rec.done = true
			rec.end = time.Since(start)
		})
	}
	wg.Wait()
	res := &Result{Policy: pol.Name, Wall: time.Since(start), Complete: true}
	if c, ok := client.(io.Closer); ok {
		_ = c.Close()
	}
	res.Probes = env.Probes.Load()
	for _, rec := range records {
		res.Requests = append(res.Requests, rec.reqs...)
		res.FanOuts = append(res.FanOuts, rec.fans...)
		res.Complete = res.Complete && rec.done
		if !rec.done {
			rec.end = p.Config.Limit
		}
		res.Finish = append(res.Finish, rec.end)
	}
	if !res.Complete {
		res.Wall = p.Config.Limit
	}
	trace.refusals(p, hosts, res)
	base.CloseIdleConnections()
	if err := closeAll(); err != nil {
		return res, fmt.Errorf("fleet: %s run: %w", pol.Name, err)
	}
	return res, nil
}

// fanOut sends width requests to one host at once and waits for them all.
// A patience above zero is the worker's own deadline for each request.
func fanOut(ctx context.Context, c Client, h *Host, start time.Time, worker, host, width int, patience time.Duration) (FanOut, []Request) {
	reqs := make([]Request, width)
	began := time.Since(start)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			reqs[i] = send(ctx, c, h, start, i, patience)
			reqs[i].Worker, reqs[i].Host = worker, host
		})
	}
	wg.Wait()
	fan := FanOut{Worker: worker, Host: host, Start: began, Dur: time.Since(start) - began}
	for _, r := range reqs {
		if r.Sent() && !r.Up {
			fan.Down = true
		}
	}
	return fan, reqs
}

func send(ctx context.Context, c Client, h *Host, start time.Time, i int, patience time.Duration) Request {
	if patience > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, patience)
		defer cancel()
	}
	url := fmt.Sprintf("%s/player_api.php?action=get_vod_streams&category_id=%d", h.URL(), i)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err) // the URL is built here; failing to parse it is a bug
	}
	at := time.Since(start)
	r := Request{Start: at, Up: h.spec.Schedule.Up(at), Impatient: patience > 0}
	resp, err := c.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		r.Status = resp.StatusCode
	}
	r.Err = err
	r.Refused = errors.Is(err, ErrRefused)
	r.Dur = time.Since(start) - at
	return r
}
