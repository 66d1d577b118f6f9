package guard_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/guard"
)

func TestKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"http://example.com", "http://example.com"},
		{"http://example.com/", "http://example.com"},
		{"http://example.com/a/b?c=d#e", "http://example.com"},
		{"http://example.com?q=1", "http://example.com"},
		{"http://example.com#frag", "http://example.com"},
		{"HTTP://Example.COM/Path", "http://example.com"},
		{"http://example.com:80/", "http://example.com"},
		{"https://example.com:443/", "https://example.com"},
		{"http://example.com:443/", "http://example.com:443"},
		{"https://example.com:80/", "https://example.com:80"},
		{"http://example.com:8080/x", "http://example.com:8080"},
		{"http://example.com:08080/x", "http://example.com:8080"},
		{"http://example.com:0080", "http://example.com"},
		{"http://example.com:/x", "http://example.com"},
		{"http://user:secret@example.com/", "http://example.com"},
		{"http://user@example.com:8080", "http://example.com:8080"},
		{"http://a@b@example.com", "http://example.com"},
		{"http://127.0.0.1:7411/v1", "http://127.0.0.1:7411"},
		{"http://[::1]:8080/x", "http://[::1]:8080"},
		{"http://[::1]/", "http://[::1]"},
		{"http://[::1]:80/", "http://[::1]"},
		{"http://[::1]:", "http://[::1]"},
		{"http://[2001:DB8::1]", "http://[2001:db8::1]"},
		{"http://[2001:db8:0:0:0:0:0:1]:443", "http://[2001:db8::1]:443"},
		{"http://[fe80::1%25en0]:8080/", "http://[fe80::1%25en0]:8080"},
		{"http://[FE80::1%25En0]/", "http://[fe80::1%25En0]"},
		{"http://[::ffff:1.2.3.4]", "http://[::ffff:1.2.3.4]"},
		{"ws://example.com:80", "ws://example.com:80"},
		{"git+ssh://Example.com:22", "git+ssh://example.com:22"},
		{"http://ex%C3%A4mple.com/", "http://exämple.com"},
		{"http://EXÄMPLE.com/", "http://exämple.com"},
		{"http://a_b-c.example~/", "http://a_b-c.example~"},
	}
	for _, tc := range cases {
		got, err := guard.Key(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Key(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestKeySchemesDiffer(t *testing.T) {
	t.Parallel()
	a, _ := guard.Key("http://a.test")
	b, _ := guard.Key("https://a.test")
	if a == b {
		t.Fatalf("http and https share key %q", a)
	}
}

func TestKeyRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, why string }{
		{"", "no scheme"},
		{"example.com", "no scheme"},
		{"example.com/path", "no scheme"},
		{"/relative/path", "no scheme"},
		{"//example.com/x", "no scheme"},
		{"1http://example.com", "no scheme"},
		{":8080", "no scheme"},
		{"localhost:8080", "no host"},
		{"mailto:user@example.com", "no host"},
		{"http:example.com", "no host"},
		{"http://", "no host"},
		{"http:///path", "no host"},
		{"http://user:secret@/path?token=abc", "no host"},
		{"http://:8080", "no host"},
		{"http://example.com:http", "port is not a number"},
		{"http://example.com:99999", "port is above 65535"},
		{"http://example.com:0", "port 0"},
		{"http://ex ample.com", "invalid character"},
		{"http://ex<ample.com", "invalid character"},
		{"http://ex%41mple.com", "ASCII"},
		{"http://ex%zzmple.com", "malformed percent escape"},
		{"http://ex%C3mple%", "malformed percent escape"},
		{"http://ex%C3.com", "UTF-8"},
		{"http://::1/", "brackets"},
		{"http://[::1/", "closing"},
		{"http://[::1]x/", "after the IPv6 host"},
		{"http://[1.2.3.4]/", "IPv6 address"},
		{"http://[example.com]/", "IPv6 address"},
		{"http://[fe80::1%en0]/", "zone"},
		{"http://[fe80::1%25]/", "zone"},
	}
	for _, tc := range cases {
		got, err := guard.Key(tc.in)
		if err == nil {
			t.Errorf("Key(%q) = %q; want an error about %s", tc.in, got, tc.why)
			continue
		}
		if !errors.Is(err, guard.ErrBadURL) {
			t.Errorf("Key(%q) error %v does not wrap ErrBadURL", tc.in, err)
		}
		if !strings.HasPrefix(err.Error(), "guard: ") || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Key(%q) error %q; want one that says %q", tc.in, err, tc.why)
		}
	}
}

// TestKeyErrorsDoNotEchoSecrets checks that a rejected URL's credentials and
// query never reach the error, which callers are likely to log.
func TestKeyErrorsDoNotEchoSecrets(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"http://user:s3cr3t@/x?token=t0k3n",
		"http://user:s3cr3t@exa mple.com/x?token=t0k3n",
		"http://user:s3cr3t@example.com:99999/x?token=t0k3n",
		"http://user:s3cr3t@[::1/x?token=t0k3n",
		"user:s3cr3t@example.com/?token=t0k3n",
	} {
		_, err := guard.Key(in)
		if err == nil {
			t.Fatalf("Key(%q) succeeded", in)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "t0k3n") || strings.Contains(msg, "user") {
			t.Errorf("Key(%q) error %q repeats part of the URL", in, msg)
		}
	}
}

func TestKeyCanonicalDoesNotAllocate(t *testing.T) {
	for _, in := range []string{"http://example.com:8080/a/b?c=d", "https://api.example.com/v1/items", "http://[::1]:8080/x"} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := guard.Key(in); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Key(%q) allocates %v times; a canonical URL should need none", in, allocs)
		}
	}
}

// urlOrigin derives the key from net/url's parse, as an independent
// reference for the fuzz test.
func urlOrigin(u *url.URL) (string, bool) {
	if u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil || !addr.Is6() {
			return "", false
		}
		host = "[" + addr.WithZone("").String()
		if z := addr.Zone(); z != "" {
			host += "%25" + z
		}
		host += "]"
	}
	key := strings.ToLower(u.Scheme) + "://" + host
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", false
		}
		if !(n == 80 && strings.HasPrefix(key, "http:")) && !(n == 443 && strings.HasPrefix(key, "https:")) {
			key += ":" + strconv.Itoa(n)
		}
	}
	return key, true
}

func FuzzKey(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://User:Pass@Example.COM:443/p?q=1#f", "http://[::1]:8080/x",
		"http://[fe80::1%25en0]/", "http://ex%C3%A4mple.com:0080", "http://a@b@c/", "http://a:/", "localhost:80",
		"http://x?y@z/", "http://x#@y/", "http://x/@y", "http://[::1]@evil/", "ftp://host:21", "http://%zz/",
		"http://user:pw@host:99999/?token=1", "http://host:8080?a=b", "http://EXA\u212aMPLE.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := guard.Key(raw)
		if err != nil {
			if !errors.Is(err, guard.ErrBadURL) {
				t.Fatalf("Key(%q) error %v does not wrap ErrBadURL", raw, err)
			}
			return
		}
		scheme, authority, ok := strings.Cut(key, "://")
		if !ok || scheme == "" || authority == "" {
			t.Fatalf("Key(%q) = %q; not scheme://host", raw, key)
		}
		if strings.ContainsAny(authority, "@/?#") {
			t.Fatalf("Key(%q) = %q carries userinfo, path, query or fragment", raw, key)
		}
		if again, err := guard.Key(key); err != nil || again != key {
			t.Fatalf("Key(Key(%q)) = %q, %v; want %q", raw, again, err, key)
		}
		if u, err := url.Parse(raw); err == nil {
			if want, ok := urlOrigin(u); ok && want != key {
				t.Fatalf("Key(%q) = %q; net/url's origin is %q", raw, key, want)
			}
		}
	})
}
