package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestSightingsCommitWithoutWaitingForTheDisk: by default a sighting of a
// known item, with or without a source, commits with synchronous_commit
// off, and nothing else does: not the items an Observe adds, not the claims and settlements that
// follow on the same connection, and no sighting at all with
// Config.SyncSightings. A deferred constraint trigger runs at commit,
// before the commit record is written, so it sees the setting that
// commit uses.
func TestSightingsCommitWithoutWaitingForTheDisk(t *testing.T) {
	// One connection: whatever a lazy sighting leaves on its session, the
	// next statement would see.
	dsn := storetest.PostgresDSN(t) + "&pool_max_conns=1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Pool().Exec(ctx, `
		CREATE TABLE commit_modes (n bigserial PRIMARY KEY, op text NOT NULL, id text NOT NULL, sync text NOT NULL);
		CREATE FUNCTION log_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO commit_modes (op, id, sync) VALUES (TG_OP, NEW.id, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER log_commit_mode AFTER INSERT OR UPDATE ON retry_items
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION log_commit_mode()`); err != nil {
		t.Fatal(err)
	}
	// modes returns "op id sync" for every write since the last call.
	var last int64
	modes := func() []string {
		t.Helper()
		rows, err := st.Pool().Query(ctx, `SELECT n, op || ' ' || id || ' ' || sync FROM commit_modes WHERE n > $1 ORDER BY n`, last)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&last, &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := func(what string, w ...string) {
		t.Helper()
		if got := modes(); !slices.Equal(got, w) {
			t.Fatalf("%s: commits %q, want %q", what, got, w)
		}
	}

	lazy, err := retry.New(st, retry.Config{ReactivateWithin: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.Add(ctx, retry.NewItem{ID: "a", NotBefore: time.Now().Add(time.Hour)},
		retry.NewItem{ID: "b", NotBefore: time.Now().Add(time.Hour)}, retry.NewItem{ID: "c", NotBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	want("add", "INSERT a on", "INSERT b on", "INSERT c on")
	if _, err := lazy.Observe(ctx, "a", retry.ObserveParams{}); err != nil {
		t.Fatal(err)
	}
	want("one sighting", "UPDATE a off")
	if _, err := lazy.ObserveMany(ctx, []string{"c", "b"}, retry.ObserveParams{}); err != nil {
		t.Fatal(err)
	}
	want("a batch of sightings", "UPDATE b off", "UPDATE c off")
	if _, err := lazy.ObserveMany(ctx, []string{"b", "new"}, retry.ObserveParams{AddIfMissing: true}); err != nil {
		t.Fatal(err)
	}
	want("a sighting that adds", "UPDATE b off", "INSERT new on")
	if _, err := lazy.Observe(ctx, "a", retry.ObserveParams{Source: "dht"}); err != nil {
		t.Fatal(err)
	}
	want("a sighting from a source", "UPDATE a off")
	if _, err := lazy.ObserveMany(ctx, []string{"c", "new2"}, retry.ObserveParams{Source: "dht", AddIfMissing: true}); err != nil {
		t.Fatal(err)
	}
	want("a sighting from a source that adds", "INSERT new2 on", "UPDATE c on", "UPDATE new2 on")
	leases, err := lazy.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute, Worker: "w"})
	if err != nil || len(leases) != 1 {
		t.Fatalf("claim: %v, %d leases", err, len(leases))
	}
	if err := lazy.Succeed(ctx, leases[0].Ref()); err != nil {
		t.Fatal(err)
	}
	// The claim also marks the other due items ready: every row it and
	// the settlement wrote must have waited.
	got := modes()
	if len(got) < 2 || got[len(got)-1] != "UPDATE "+leases[0].ID+" on" {
		t.Fatalf("the claim and settlement after them: commits %q, want the settlement of %s last", got, leases[0].ID)
	}
	for _, c := range got {
		if !strings.HasSuffix(c, " on") {
			t.Fatalf("the claim and settlement after them: commits %q, want every one synchronous", got)
		}
	}

	sync, err := retry.New(st, retry.Config{ReactivateWithin: time.Microsecond, SyncSightings: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sync.Observe(ctx, "a", retry.ObserveParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sync.ObserveMany(ctx, []string{"b", "c"}, retry.ObserveParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sync.Observe(ctx, "a", retry.ObserveParams{Source: "tracker"}); err != nil {
		t.Fatal(err)
	}
	want("sightings with SyncSightings", "UPDATE a on", "UPDATE b on", "UPDATE c on", "UPDATE a on")
}
