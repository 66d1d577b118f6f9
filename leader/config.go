package leader

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// Defaults.
const (
	DefaultName     = "hostguard"
	DefaultLeaseFor = 15 * time.Second
)

const maxName = 200

// minLease keeps timers meaningful: below it, scheduling noise is the lease.
const minLease = 10 * time.Millisecond

// Config configures an Elector. The zero value is usable.
type Config struct {
	// Name is the election: electors with the same Name on one store
	// choose one leader. "": DefaultName ("hostguard"). At most 200
	// bytes of clean text (no NUL byte, control character or invalid UTF-8).
	Name string
	// NodeID identifies this elector in the lease. "": hostname, process
	// id and a random suffix, so that a restarted process is a new node.
	NodeID string
	// LeaseFor is how long a lease lasts without renewal, and so the
	// longest a cluster goes without a leader after one dies. 0:
	// DefaultLeaseFor (15 s). At least 10 ms.
	LeaseFor time.Duration
	// RenewEvery is how often the leader renews its lease, and how often
	// followers try to take it. 0: LeaseFor / 3. At most LeaseFor / 2.
	// The leader gives up leading, and cancels its work, RenewEvery / 2
	// before its lease would expire when it cannot renew in time; the
	// clocks the nodes stamp leases with (Now) must agree to better than
	// that, as the store's cluster clock does.
	RenewEvery time.Duration
	// Now is the clock for the lease times written to the store. nil: the
	// store's cluster clock when it keeps one (store/postgres: the
	// database's, so that a node whose clock runs ahead cannot take a
	// live lease), else time.Now. (Deadlines inside the process use the
	// monotonic clock.)
	Now func() time.Time
	// Logger gets one line per change of leadership. nil: slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.NodeID == "" {
		c.NodeID = defaultNodeID()
	}
	if c.LeaseFor == 0 {
		c.LeaseFor = DefaultLeaseFor
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.LeaseFor / 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	for _, f := range []struct{ field, v string }{{"name", c.Name}, {"node_id", c.NodeID}} {
		switch {
		case len(f.v) > maxName:
			return invalidf(f.field, "is longer than %d bytes", maxName)
		case inputtext.Check(f.v) != nil:
			return invalidf(f.field, "%s", inputtext.Check(f.v))
		case strings.TrimSpace(f.v) == "":
			return invalidf(f.field, "is blank")
		}
	}
	if c.LeaseFor < minLease {
		return invalidf("lease", "is %v; want 0 (default %v) or at least %v", c.LeaseFor, DefaultLeaseFor, minLease)
	}
	if c.RenewEvery <= 0 || c.RenewEvery > c.LeaseFor/2 {
		return invalidf("renew_every", "is %v; want 0 (default lease/3) up to lease/2 (%v)", c.RenewEvery, c.LeaseFor/2)
	}
	return nil
}

func defaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	if len(id) > maxName {
		id = id[len(id)-maxName:]
	}
	return id
}
