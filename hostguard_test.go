package hostguard_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard"
)

func TestParseDSN(t *testing.T) {
	tests := []struct {
		dsn, kind, target string
	}{
		{"hostguard.db", "sqlite", "hostguard.db"},
		{"/var/lib/hg/x.db", "sqlite", "/var/lib/hg/x.db"},
		{"sqlite:/tmp/x.db", "sqlite", "/tmp/x.db"},
		{"sqlite:///tmp/x.db", "sqlite", "/tmp/x.db"},
		{"postgres://u@h/db", "postgres", "postgres://u@h/db"},
		{"postgresql://u@h/db", "postgres", "postgresql://u@h/db"},
	}
	for _, tt := range tests {
		kind, target, err := hostguard.ParseDSN(tt.dsn)
		if err != nil || kind != tt.kind || target != tt.target {
			t.Errorf("ParseDSN(%q) = %q, %q, %v; want %q, %q", tt.dsn, kind, target, err, tt.kind, tt.target)
		}
	}
	for _, bad := range []string{"", "   ", "sqlite:", "mysql://root:pw@h/db"} {
		_, _, err := hostguard.ParseDSN(bad)
		if err == nil || !strings.Contains(err.Error(), "accepted forms") {
			t.Errorf("ParseDSN(%q): want an error naming the accepted forms, got %v", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("ParseDSN(%q) echoes a credential: %v", bad, err)
		}
	}
}

func TestOpenSQLiteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hostguard.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
