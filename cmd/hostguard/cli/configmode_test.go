package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeConfigMode writes body to a file of the test with mode, whatever
// the umask.
func writeConfigMode(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hostguard.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRefusesAWritableConfig: a file its group or others may write
// would let them open private destinations and foreign Host names; serve
// refuses it with exit 2, naming the file and its mode, unless the
// operator accepts it by flag or variable (never by the file itself).
func TestServeRefusesAWritableConfig(t *testing.T) {
	const hostile = `{"allow_private": true, "allowed_hosts": ["attacker.example"]}`
	for _, c := range []struct {
		mode os.FileMode
		who  string
	}{
		{0o666, "writable by its group and others (mode 0666)"},
		{0o602, "writable by others (mode 0602)"},
		{0o620, "writable by its group (mode 0620)"},
	} {
		file := writeConfigMode(t, hostile, c.mode)
		code, _, errs := run("serve", "--config", file)
		if code != ExitUsage || !strings.Contains(errs, "configuration "+file+" is "+c.who) ||
			!strings.Contains(errs, "--accept-writable-config") {
			t.Errorf("mode %04o: exit %d, stderr %q", c.mode, code, errs)
		}
	}

	file := writeConfigMode(t, hostile, 0o666)
	if _, code, stop := parseServe([]string{"--config", file, "--accept-writable-config"}, &strings.Builder{}); stop {
		t.Fatalf("with --accept-writable-config: exit %d", code)
	}
	t.Setenv("HOSTGUARD_ACCEPT_WRITABLE_CONFIG", "true")
	if _, code, stop := parseServe([]string{"--config", file}, &strings.Builder{}); stop {
		t.Fatalf("with HOSTGUARD_ACCEPT_WRITABLE_CONFIG: exit %d", code)
	}
	t.Setenv("HOSTGUARD_ACCEPT_WRITABLE_CONFIG", "")

	// The file cannot vouch for itself, even when it is private.
	for _, mode := range []os.FileMode{0o666, 0o600} {
		self := writeConfigMode(t, `{"accept_writable_config": true}`, mode)
		code, _, errs := run("serve", "--config", self)
		if code != ExitUsage || !strings.Contains(errs, "accept_writable_config: cannot be set in the configuration file") {
			t.Errorf("mode %04o, accepted by the file itself: exit %d, stderr %q", mode, code, errs)
		}
	}

	// Readable by others is not writable: still served.
	for _, mode := range []os.FileMode{0o600, 0o644, 0o444} {
		ok := writeConfigMode(t, `{"listen": "127.0.0.1:7501"}`, mode)
		if _, code, stop := parseServe([]string{"--config", ok}, &strings.Builder{}); stop {
			t.Errorf("mode %04o: exit %d", mode, code)
		}
	}
}

// TestDBPasswordOnTheCommandLineIsWarnedAbout: --db with a password shows
// it in the process list, so serve warns, without the password; the
// variable form is quiet.
func TestDBPasswordOnTheCommandLineIsWarnedAbout(t *testing.T) {
	const secret = "s3cret-pw"
	// Port 1 refuses at once: the daemon warns, then fails to open the
	// store.
	dsn := "postgres://hg:" + secret + "@127.0.0.1:1/hg?sslmode=disable&connect_timeout=2"
	serveQuick := func(args ...string) string {
		var errs strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if code := serve(ctx, append([]string{"--listen", "127.0.0.1:0", "--proxy-listen", ""}, args...), &errs); code != ExitError {
			t.Fatalf("serve %v: exit %d, want %d (no store)\n%s", args, code, ExitError, errs.String())
		}
		return errs.String()
	}
	out := serveQuick("--db", dsn)
	if !strings.Contains(out, "--db carries a password") || !strings.Contains(out, "HOSTGUARD_DB") {
		t.Fatalf("no warning for --db with a password:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the password was printed:\n%s", out)
	}
	for _, quiet := range []string{"postgres://hg@127.0.0.1:1/hg?sslmode=disable&connect_timeout=2"} {
		if out := serveQuick("--db", quiet); strings.Contains(out, "carries a password") {
			t.Fatalf("warned for %s:\n%s", quiet, out)
		}
	}
	t.Setenv("HOSTGUARD_DB", dsn)
	if out := serveQuick(); strings.Contains(out, "carries a password") || strings.Contains(out, secret) {
		t.Fatalf("the variable form warned or printed the password:\n%s", out)
	}
}

func TestDSNHasPassword(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"postgres://u:p@h/db":                     true,
		"postgresql://u:p@h:5432/db":              true,
		"postgres://u@h/db?password=p":            true,
		"postgres://u:@h/db":                      true,
		"postgres://u@h/db":                       false,
		"postgres://h/db?sslmode=disable":         false,
		"/var/lib/hostguard/hostguard.db":         false,
		"sqlite:/tmp/x:y@z.db":                    false,
		"postgres://u:p%zz@h/db":                  true, // does not parse
		"postgres://h/db?application_name=a%zzpw": false,
	}
	for dsn, want := range cases {
		if got := dsnHasPassword(dsn); got != want {
			t.Errorf("dsnHasPassword(%q) = %v, want %v", dsn, got, want)
		}
	}
}

// TestShortTokenIsWarnedAbout: the wrong-token count never refuses the
// right token, so a short token is what a guesser finds; serve says so,
// without the token.
func TestShortTokenIsWarnedAbout(t *testing.T) {
	dead := "postgres://hg@127.0.0.1:1/hg?sslmode=disable&connect_timeout=2"
	for _, c := range []struct {
		token string
		warn  bool
	}{
		{"sh0rt-t0k", true},
		{"0123456789abcdef", false},
		{"", false},
	} {
		var errs strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code := serve(ctx, []string{"--listen", "127.0.0.1:0", "--proxy-listen", "", "--db", dead, "--token", c.token}, &errs)
		cancel()
		if code != ExitError {
			t.Fatalf("token %q: exit %d, want %d (no store)\n%s", c.token, code, ExitError, errs.String())
		}
		out := errs.String()
		if got := strings.Contains(out, "the token is only 9 characters long"); got != c.warn {
			t.Errorf("token of %d characters: warned %v, want %v:\n%s", len(c.token), got, c.warn, out)
		}
		if c.token != "" && strings.Contains(out, c.token) {
			t.Errorf("the token was printed:\n%s", out)
		}
	}
}
