package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

// TestStatsReadBackWhatTheyWrite: retry.Stats writes its lag in seconds
// and ItemsStats adds "due"; decoding either gives back what was encoded,
// which decoding into retry.Stats alone would not.
func TestStatsReadBackWhatTheyWrite(t *testing.T) {
	st := retry.Stats{Total: 3, ByState: map[string]int{"pending": 3}, DueNow: 2, OldestDueLag: 1500 * time.Millisecond}
	in := api.ItemsStats{QueueStats: api.QueueStats{Stats: st}, Due: api.DueHistogram{Waiting: 2}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"oldest_due_lag_seconds":1.5`) || !strings.Contains(string(b), `"due":{`) {
		t.Fatalf("encoding %s: want the lag in seconds and the due histogram", b)
	}
	var out api.ItemsStats
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.OldestDueLag != st.OldestDueLag || out.Total != 3 || out.ByState["pending"] != 3 || out.Due.Waiting != 2 {
		t.Fatalf("read back %+v", out)
	}
	var q api.QueueStats
	if err := json.Unmarshal(b, &q); err != nil || q.OldestDueLag != st.OldestDueLag || q.DueNow != 2 {
		t.Fatalf("QueueStats read back %+v, %v", q, err)
	}
	// Encoding a QueueStats is encoding its retry.Stats.
	qb, _ := json.Marshal(api.QueueStats{Stats: st})
	sb, _ := json.Marshal(st)
	if string(qb) != string(sb) {
		t.Fatalf("QueueStats encodes as %s, retry.Stats as %s", qb, sb)
	}
}
