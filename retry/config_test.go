package retry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type nopStore struct{ Store }

func TestNewNamesTheBadField(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Default: []time.Duration{time.Minute, 0}}, "Default[1]"},
		{Config{Default: []time.Duration{-time.Second}}, "Default[0]"},
		{Config{Default: []time.Duration{11 * 365 * 24 * time.Hour}}, "Default[0]"},
		{Config{Classes: map[string][]time.Duration{"x": {}}}, `Classes["x"]`},
		{Config{Classes: map[string][]time.Duration{"x": {time.Second, 0}}}, `Classes["x"][1]`},
		{Config{Classes: map[string][]time.Duration{"": {time.Second}}}, `Classes[""]`},
		{Config{Jitter: 1}, "Jitter"},
		{Config{Jitter: -0.1}, "Jitter"},
		{Config{RetryShare: 1.5}, "RetryShare"},
		{Config{RetryShare: -0.5}, "RetryShare"},
		{Config{ReactivateWithin: -time.Second}, "ReactivateWithin"},
		{Config{ObserveStep: -1}, "ObserveStep"},
		{Config{ObserveMaxPriority: MaxPriority + 1}, "ObserveMaxPriority"},
		{Config{ExpiriesPerFailure: -1}, "ExpiriesPerFailure"},
	}
	for _, tt := range tests {
		_, err := New(nopStore{}, tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "retry: ") {
			t.Errorf("New(%+v) = %v; want an ErrInvalid naming %s", tt.cfg, err, tt.want)
		}
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New(nil store): want an error")
	}
}

func TestZeroConfigMeansDefaults(t *testing.T) {
	s, err := New(nopStore{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.cfg
	if len(c.Default) != 6 || c.Default[5] != 30*24*time.Hour || c.Jitter != 0.1 || c.RetryShare != 0.3 ||
		c.ReactivateWithin != 10*time.Minute || c.ObserveStep != 1 || c.ObserveMaxPriority != 10 ||
		c.ExpiriesPerFailure != 3 || c.Now == nil || c.Rand == nil {
		t.Fatalf("defaults: %+v", c)
	}
	s, _ = New(nopStore{}, Config{NoJitter: true, Jitter: 0.5})
	if s.cfg.Jitter != 0 {
		t.Fatalf("NoJitter left jitter %v", s.cfg.Jitter)
	}
}
