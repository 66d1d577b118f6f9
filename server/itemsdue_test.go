package server

import (
	"testing"
	"time"
)

type dueJSON struct {
	Buckets []struct {
		Name          string `json:"name"`
		WithinSeconds *int64 `json:"within_seconds"`
		Count         int    `json:"count"`
	} `json:"buckets"`
	Waiting   int       `json:"waiting"`
	OldestDue time.Time `json:"oldest_due"`
}

func TestDueHistogramInStatusAndStats(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{
		{"id": "now"},
		{"id": "soon", "not_before": now.Add(10 * time.Minute)},
		{"id": "week", "not_before": now.Add(3 * 24 * time.Hour)},
		{"id": "far", "not_before": now.Add(365 * 24 * time.Hour)},
		{"id": "held"},
	}})
	// Leases are not waiting: claim one of the two due items.
	if ls := f.claim(t, 1, 60); len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	var rep struct {
		ItemsDue *dueJSON `json:"items_due"`
	}
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	var st struct {
		Total int      `json:"total"`
		Due   *dueJSON `json:"due"`
	}
	decodeInto(t, f.do("GET", "/v1/items/stats", nil), &st)
	if st.Total != 5 {
		t.Errorf("stats total %d, want 5 (the statistics must stay beside the histogram)", st.Total)
	}
	for what, h := range map[string]*dueJSON{"status items_due": rep.ItemsDue, "stats due": st.Due} {
		if h == nil {
			t.Errorf("%s missing", what)
			continue
		}
		want := []struct {
			name   string
			within int64
			count  int
		}{{"now", 0, 1}, {"1h", 3600, 1}, {"1d", 86400, 0}, {"7d", 7 * 86400, 1}, {"30d", 30 * 86400, 0}, {"later", -1, 1}}
		if len(h.Buckets) != len(want) {
			t.Fatalf("%s: %+v", what, h)
		}
		for i, w := range want {
			b := h.Buckets[i]
			within := int64(-1)
			if b.WithinSeconds != nil {
				within = *b.WithinSeconds
			}
			if b.Name != w.name || within != w.within || b.Count != w.count {
				t.Errorf("%s bucket %d = %s/%d/%d, want %s/%d/%d", what, i, b.Name, within, b.Count, w.name, w.within, w.count)
			}
		}
		if h.Waiting != 4 || !h.OldestDue.Equal(now) {
			t.Errorf("%s: waiting %d, oldest %v; want 4, %v", what, h.Waiting, h.OldestDue, now)
		}
	}
}
