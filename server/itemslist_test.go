package server

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

type itemPage struct {
	Items []itemJSON `json:"items"`
	Next  string     `json:"next"`
}

func TestItemsList(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{
		{"id": "a", "payload": "cA=="}, {"id": "b"}, {"id": "c"}, {"id": "d", "not_before": now.Add(2 * time.Hour)},
	}})
	ls := f.claim(t, 1, 60)
	if len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	f.do("POST", itemPath(ls[0].ID, "fail"), map[string]any{"lease": ls[0].Lease, "class": "timeout"})

	var all []string
	p := "/v1/items?limit=3"
	for range 5 {
		var page itemPage
		decodeInto(t, f.do("GET", p, nil), &page)
		for _, it := range page.Items {
			all = append(all, it.ID)
			if it.Payload != nil {
				t.Errorf("%s listed with its payload", it.ID)
			}
		}
		if page.Next == "" {
			break
		}
		p = "/v1/items?limit=3&after=" + url.QueryEscape(page.Next)
	}
	if len(all) != 4 || all[0] != "a" || all[3] != "d" {
		t.Fatalf("listed %v, want a b c d", all)
	}
	var page itemPage
	decodeInto(t, f.do("GET", "/v1/items?state=scheduled&class=timeout", nil), &page)
	if len(page.Items) != 1 || page.Items[0].ID != ls[0].ID || page.Items[0].LastClass != "timeout" {
		t.Fatalf("scheduled timeout: %+v", page)
	}
	decodeInto(t, f.do("GET", "/v1/items?state=pending,scheduled&due_before="+url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339)), nil), &page)
	if len(page.Items) != 3 {
		t.Fatalf("due within the hour: %+v", page)
	}
	for _, tt := range []struct{ query, field string }{
		{"stat=pending", "stat"},
		{"state=sleeping", "state"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=x", "limit"},
		{"due_before=tomorrow", "due_before"},
		{"after=a", "after"},
		{"class=a%07b", "class"},
		{"state=pending&state=done", "state"},
	} {
		expectError(t, f.do("GET", "/v1/items?"+tt.query, nil), http.StatusBadRequest, tt.field)
	}
}
