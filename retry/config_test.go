package retry

import (
	"encoding/json"
	"errors"
	"math"
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
		{Config{Default: []time.Duration{time.Minute, 0}}, "default[1]"},
		{Config{Default: []time.Duration{-time.Second}}, "default[0]"},
		{Config{Default: []time.Duration{11 * 365 * 24 * time.Hour}}, "default[0]"},
		{Config{Classes: map[string]ClassConfig{"x": {}}}, `classes.x.ladder`},
		{Config{Classes: map[string]ClassConfig{"x": {Ladder: Ladder{time.Second, 0}}}}, `classes.x.ladder[1]`},
		{Config{Classes: map[string]ClassConfig{"": {Ladder: Ladder{time.Second}}}}, `classes.""`},
		{Config{Classes: map[string]ClassConfig{"x": {Ladder: Ladder{time.Second}, Escalate: "peers"}}}, `classes.x.escalate`},
		{Config{Jitter: 1}, "jitter"},
		{Config{Jitter: math.NaN()}, "jitter"},
		{Config{RetryShare: 1.5}, "retry_share"},
		{Config{RetryShare: -0.5}, "retry_share"},
		{Config{ReactivateWithin: -time.Second}, "reactivate_within"},
		{Config{ObserveStep: -1}, "observe_step"},
		{Config{ObserveMaxPriority: MaxPriority + 1}, "observe_max_priority"},
		{Config{ExpiriesPerFailure: -1}, "expiries_per_failure"},
		{Config{WakeJitter: 25 * time.Hour}, "wake_jitter"},
	}
	for _, tt := range tests {
		_, err := New(nopStore{}, tt.cfg)
		var ie *InputError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "retry: ") ||
			!errors.As(err, &ie) || ie.Field != tt.want {
			t.Errorf("New(%+v) = %v; want an ErrInvalid naming %s", tt.cfg, err, tt.want)
		}
		if verr := tt.cfg.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("Validate(%+v) = %v; want what New said, %v", tt.cfg, verr, err)
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
	s, _ = New(nopStore{}, Config{Jitter: -0.5})
	if s.cfg.Jitter != 0 {
		t.Fatalf("a negative Jitter left jitter %v", s.cfg.Jitter)
	}
}

func TestClassesDecodeFromJSON(t *testing.T) {
	var c Config
	err := json.Unmarshal([]byte(`{"classes":{"hash_mismatch":{"ladder":["24h","168h","720h"],"escalate":"sources"},
		"no_peers":{"ladder":["1h","6h"]}}}`), &c)
	if err != nil {
		t.Fatal(err)
	}
	hm := c.Classes["hash_mismatch"]
	if len(hm.Ladder) != 3 || hm.Ladder[2] != 720*time.Hour || hm.Escalate != BySources || c.Classes["no_peers"].Escalate != "" {
		t.Fatalf("decoded %+v", c.Classes)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(hm)
	if err != nil || string(b) != `{"ladder":["24h0m0s","168h0m0s","720h0m0s"],"escalate":"sources"}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var l Ladder
	var ie *InputError
	if err := json.Unmarshal([]byte(`["1h","soon"]`), &l); !errors.As(err, &ie) || ie.Field != "[1]" {
		t.Fatalf("a bad step: %v; want an InputError for [1]", err)
	}
	if err := json.Unmarshal([]byte(`"1h"`), &l); !errors.Is(err, ErrInvalid) {
		t.Fatalf("not a list: %v; want ErrInvalid", err)
	}
}

// TestScheduleSpellsItsSettings: what Stats shows under "schedule" is the
// configuration file's spelling, so an operator can compare the two.
func TestScheduleSpellsItsSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{`"reactivate_within":"10m0s"`, `"keep_done":"720h0m0s"`, `"sync_sightings":false`, `"classes":{}`}},
		{Config{KeepDone: -1, SyncSightings: true, ReactivateWithin: time.Second},
			[]string{`"reactivate_within":"1s"`, `"keep_done":"forever"`, `"sync_sightings":true`}},
	} {
		s, err := New(nopStore{}, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(s.Schedule())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%+v: schedule %s, want %s in it", tc.cfg, b, w)
			}
		}
	}
}
