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

// LongOutage describes the long-outage phase: one host, down from the
// start for Down and up after it, asked for throughout by one worker that
// sends a fan-out of Width requests every Every (waiting for each to
// finish), until Down + After.
type LongOutage struct {
	Timeout time.Duration // the unit, as in Config
	Down    time.Duration // 0 means 30 Timeouts
	After   time.Duration // 0 means 10 Timeouts
	Every   time.Duration // 0 means a quarter Timeout
	Width   int           // 0 means 3
	Hang    bool          // the host accepts and stays silent; false: it refuses
}

func (c LongOutage) withDefaults() LongOutage {
	if c.Timeout == 0 {
		c.Timeout = 300 * time.Millisecond
	}
	if c.Down == 0 {
		c.Down = 30 * c.Timeout
	}
	if c.After == 0 {
		c.After = 10 * c.Timeout
	}
	if c.Every == 0 {
		c.Every = c.Timeout / 4
	}
	if c.Width == 0 {
		c.Width = 3
	}
	return c
}

// OutageResult is what one policy did in the long-outage phase.
type OutageResult struct {
	Policy string
	// Probes counts the probes the policy sent on its own; SentDown the
	// workload's requests that went to the network while the host was
	// down (a probe-less breaker's trials among them).
	Probes, SentDown int
	// Blocked is worker time spent in fan-outs that waited on the host
	// while it was down.
	Blocked time.Duration
	// Notice is from the host coming back to the first answer a worker
	// request got; Noticed is false when none did before the end.
	Notice  time.Duration
	Noticed bool
	// RefusedUp counts requests refused after the host was back.
	RefusedUp int
}

// RunLongOutage runs the long-outage phase for pol.
func RunLongOutage(ctx context.Context, c LongOutage, pol Policy) (OutageResult, error) {
	c = c.withDefaults()
	start := time.Now().Add(20 * time.Millisecond)
	spec := HostSpec{Kind: Flapping, Latency: c.Timeout / 30, Schedule: Schedule{{From: 0, To: c.Down, Hang: c.Hang}}}
	h, err := StartHost(spec, start)
	if err != nil {
		return OutageResult{}, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	env := Env{
		Timeout: c.Timeout,
		Base:    base,
		Up:      func(string) bool { return spec.Schedule.Up(time.Since(start)) },
		Probes:  new(atomic.Int64),
	}
	client := pol.New(env)
	time.Sleep(time.Until(start))
	ctx, cancel := context.WithDeadline(ctx, start.Add(c.Down+c.After+2*c.Timeout))
	defer cancel()

	res := OutageResult{Policy: pol.Name}
	var mu sync.Mutex
	end := c.Down + c.After
	for next := time.Duration(0); next < end && ctx.Err() == nil; next += c.Every {
		time.Sleep(time.Until(start.Add(next)))
		began := time.Since(start)
		var wg sync.WaitGroup
		waitedDown := false
		for i := range c.Width {
			wg.Go(func() {
				r := send(ctx, client, h, start, i, 0)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Refused && r.Up:
					res.RefusedUp++
				case r.Sent() && !r.Up:
					res.SentDown++
					waitedDown = true
				case r.Status != 0 && r.Start >= c.Down:
					if d := r.Start + r.Dur - c.Down; !res.Noticed || d < res.Notice {
						res.Notice, res.Noticed = d, true
					}
				}
			})
		}
		wg.Wait()
		if waitedDown {
			res.Blocked += time.Since(start) - began
		}
	}
	if cl, ok := client.(io.Closer); ok {
		_ = cl.Close()
	}
	res.Probes = int(env.Probes.Load())
	base.CloseIdleConnections()
	if err := h.Close(); err != nil {
		return res, fmt.Errorf("fleet: %s long outage: %w", pol.Name, err)
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return res, err
	}
	return res, nil
}
