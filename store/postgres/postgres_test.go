package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newHarness(t *testing.T) *storetest.Harness {
	dsn := storetest.PostgresDSN(t)
	open := func(t testing.TB, dsn string) hostguard.Store {
		s, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return &storetest.Harness{
		Engine: "postgres",
		Open:   func(t testing.TB) hostguard.Store { return open(t, dsn) },
		OpenPartitioned: func(t testing.TB) (hostguard.Store, *storetest.Partition) {
			through, p := storetest.NewPartition(t, dsn)
			return open(t, through), p
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, newHarness) }

func TestRefusesNewerSchema(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = postgres.Open(ctx, dsn)
	if err == nil || !strings.Contains(err.Error(), "9999") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("want a 'newer schema' error naming version 9999, got %v", err)
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestBadDSNDoesNotEchoPassword(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://u:s3cret@127.0.0.1:5432/db?sslmode=bogus")
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error leaks the password: %v", err)
	}
}
