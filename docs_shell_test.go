package hostguard_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// The shell blocks of README.md and docs/api.md are run, as a reader would
// paste them, against the real binary: the documented addresses
// (127.0.0.1:7411 and :7412) become the test daemon's, every curl's status
// is recorded and compared with the answer the document shows, and the
// values a reader would copy from one answer into the next command (a
// ticket, a lease, a grant) are carried over. Hosts on the internet in an
// example become loopback hosts of the test, since nothing else is
// reachable; that is the only other rewrite.

// shellPrelude wraps what the blocks call. curl reports each transfer's
// status on stderr; `hostguard serve` starts in the background on the
// addresses the test chose (it runs until stopped, in a terminal of its
// own in the README) and the block's client commands find it; sleep is
// counted, so that a loop's pauses can be seen.
const shellPrelude = `
curl() { command curl -w '%{stderr}hostguard-test: %{http_code} %{http_connect} %{url_effective}\n' "$@"; }
hostguard() {
	if [ "${1:-}" != serve ]; then command hostguard "$@"; return; fi
	shift
	command hostguard serve "$@" --listen "$HG_SERVE_API" --proxy-listen "$HG_SERVE_PROXY" >>"$HG_SERVE_LOG" 2>&1 &
	for _ in $(seq 1 200); do
		command curl -s -o /dev/null "http://$HG_SERVE_API/healthz" && break
		command sleep 0.05
	done
	command curl -s -o /dev/null "http://$HG_SERVE_API/healthz" || { echo "hostguard serve did not come up:" >&2; cat "$HG_SERVE_LOG" >&2; return 1; }
	export HOSTGUARD_ADDR="$HG_SERVE_API"
}
sleep() { echo slept >>"$HG_SLEEPS"; command sleep 0.05; }
trap 'jobs -p | xargs -r kill 2>/dev/null; wait' EXIT
`

// skippedCommand says why a line of a block is not run: building,
// installing software and driving systemd change the machine, and the test
// suite is what runs this test. scripts/check-dist.sh checks the unit.
func skippedCommand(line string) string {
	fields := strings.Fields(line)
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		fields = fields[1:] // VAR=value before the command
	}
	if len(fields) == 0 {
		return ""
	}
	switch fields[0] {
	case "make":
		return "builds or runs the test suite"
	case "sudo", "systemctl", "journalctl":
		return "installs or drives a system service"
	case "go", "pip", "pip3", "npm", "npx", "apt-get", "apt":
		return "builds or installs software"
	}
	if len(fields) > 2 && strings.HasPrefix(fields[0], "python") && fields[1] == "-m" && fields[2] == "pip" {
		return "installs software"
	}
	return ""
}

type curlCall struct {
	code, connect int
	url           string
}

type shellRun struct {
	stdout, stderr string
	calls          []curlCall
	sleeps         int
	err            error
}

// shellEnv is where blocks run: a working directory, the binary on PATH,
// and the addresses a block's own `hostguard serve` takes.
type shellEnv struct {
	t      *testing.T
	dir    string
	binDir string
	extra  []string
}

func newShellEnv(t *testing.T, binDir string, extra ...string) *shellEnv {
	return &shellEnv{t: t, dir: t.TempDir(), binDir: binDir, extra: extra}
}

func (e *shellEnv) cmd(script string) (*exec.Cmd, *logtest.Buffer, *logtest.Buffer, string) {
	sleeps := filepath.Join(e.dir, "sleeps")
	_ = os.Remove(sleeps)
	cmd := exec.Command("bash", "-c", shellPrelude+script)
	cmd.Dir = e.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	env := []string{"PATH=" + e.binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + e.dir, "XDG_STATE_HOME=" + filepath.Join(e.dir, "state"), "LANG=C.UTF-8",
		"HG_SERVE_API=" + freeAddr(e.t), "HG_SERVE_PROXY=" + freeAddr(e.t),
		"HG_SERVE_LOG=" + filepath.Join(e.dir, "serve.log"), "HG_SLEEPS=" + sleeps}
	cmd.Env = append(env, e.extra...)
	var stdout, stderr logtest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr, sleeps
}

// run runs a block to its end, under set -e.
func (e *shellEnv) run(script string) shellRun {
	cmd, stdout, stderr, sleeps := e.cmd("set -e\n" + script)
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = fmt.Errorf("still running after 2 minutes: %v", <-done)
	}
	return finishRun(stdout, stderr, sleeps, err)
}

// runUntil runs a block that never ends by itself (a worker loop) until
// cond holds, then stops it with its children.
func (e *shellEnv) runUntil(script, what string, cond func(shellRun) bool) shellRun {
	cmd, stdout, stderr, sleeps := e.cmd(script)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var exited error
	ended := false
	ok := waitfor.Until(30*time.Second, func() bool {
		select {
		case exited = <-done:
			ended = true
			return true
		default:
		}
		return cond(finishRun(stdout, stderr, sleeps, nil))
	})
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	if !ended {
		<-done
	}
	r := finishRun(stdout, stderr, sleeps, nil)
	if !ok {
		r.err = fmt.Errorf("%s did not happen within 30 s", what)
	} else if ended || !cond(r) {
		r.err = fmt.Errorf("the loop ended by itself (%v) before %s", exited, what)
	}
	return r
}

var curlLine = regexp.MustCompile(`(?m)^hostguard-test: (\d{3}) (\d{3}) (\S*)$`)

func finishRun(stdout, stderr *logtest.Buffer, sleeps string, err error) shellRun {
	r := shellRun{stdout: stdout.String(), err: err}
	for _, m := range curlLine.FindAllStringSubmatch(stderr.String(), -1) {
		code, _ := strconv.Atoi(m[1])
		connect, _ := strconv.Atoi(m[2])
		r.calls = append(r.calls, curlCall{code: code, connect: connect, url: m[3]})
	}
	r.stderr = curlLine.ReplaceAllString(stderr.String(), "")
	if data, e := os.ReadFile(sleeps); e == nil {
		r.sleeps = strings.Count(string(data), "slept")
	}
	return r
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// docDaemon is the binary serving, as the README starts it plus the
// flags given, on free loopback ports.
type docDaemon struct{ api, proxy string }

func startDocDaemon(t *testing.T, bin string, env []string, args ...string) docDaemon {
	t.Helper()
	dir := t.TempDir()
	d := docDaemon{api: freeAddr(t), proxy: freeAddr(t)}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", d.api, "--proxy-listen", d.proxy}, args...)...)
	cmd.Env = append([]string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "PATH=" + os.Getenv("PATH")}, env...)
	var log logtest.Buffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	up := waitfor.Until(20*time.Second, func() bool {
		resp, err := http.Get("http://" + d.api + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !up {
		t.Fatalf("the daemon did not come up: %s", log.String())
	}
	return d
}

func (d docDaemon) rewrite(s string) string {
	return strings.NewReplacer("127.0.0.1:7411", d.api, "127.0.0.1:7412", d.proxy).Replace(s)
}

// tlsHostOn starts an HTTPS host answering 200 "hello" on addr, and returns
// its URL and the file of the certificate to trust.
func tlsHostOn(t *testing.T, ip string) (url, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: ip},
		IPAddresses: []net.IP{net.ParseIP(ip)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile
}

func buildHostguard(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "hostguard")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/hostguard").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, dir
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; the documentation's shell blocks need it", tool)
			}
			t.Skipf("%s is not installed; the documentation's shell blocks need it", tool)
		}
	}
}

// wantStatuses reads what the document shows after a block: a `# NNN`
// comment per command, or the status line of the answer shown, or an
// error body (some 4xx or 5xx); otherwise every call is a success.
func wantStatuses(block string, answer *fence) (exact []int, failure bool) {
	for _, line := range strings.Split(block, "\n") {
		if m := regexp.MustCompile(`^# (\d{3}) `).FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			exact = append(exact, n)
		}
	}
	if exact != nil || answer == nil {
		return exact, false
	}
	if m := regexp.MustCompile(`^HTTP/1\.1 (\d{3}) `).FindStringSubmatch(answer.text); m != nil {
		n, _ := strconv.Atoi(m[1])
		return []int{n}, false
	}
	return nil, strings.HasPrefix(answer.text, `{"error":`)
}

func checkCalls(t *testing.T, where string, r shellRun, exact []int, failure bool) {
	t.Helper()
	if len(r.calls) == 0 {
		t.Errorf("%s: no curl call ran\nstdout: %s\nstderr: %s", where, r.stdout, r.stderr)
		return
	}
	if exact != nil {
		got := make([]int, len(r.calls))
		for i, c := range r.calls {
			got[i] = c.code
		}
		if fmt.Sprint(got) != fmt.Sprint(exact) {
			t.Errorf("%s: statuses %v, the document shows %v\nstdout: %s\nstderr: %s", where, got, exact, r.stdout, r.stderr)
		}
		return
	}
	for _, c := range r.calls {
		if ok := c.code >= 200 && c.code < 300; ok == failure {
			t.Errorf("%s: %s answered %d, the document shows %s\nstdout: %s\nstderr: %s", where, c.url, c.code,
				map[bool]string{true: "an error", false: "a success"}[failure], r.stdout, r.stderr)
		}
	}
}

// carried are the values a reader copies from an answer into a later
// command (a ticket, a grant): the document's value and the daemon's real
// one, matched by order.
var carried = []*regexp.Regexp{
	regexp.MustCompile(`"ticket":"([0-9a-f]{32})"`),
	regexp.MustCompile(`"id":"(g_[0-9a-f]+)"`),
}

func carry(docAnswer, real string, into map[string]string) {
	for _, re := range carried {
		doc, got := re.FindAllStringSubmatch(docAnswer, -1), re.FindAllStringSubmatch(real, -1)
		for i := range min(len(doc), len(got)) {
			into[doc[i][1]] = got[i][1]
		}
	}
}

var (
	leaseOf  = regexp.MustCompile(`"id":"([^"]+)","lease":"([0-9a-f]{32})"`)
	leaseUse = regexp.MustCompile(`/v1/items/([^/ ]+)/\w+ -d '\{"lease":"([0-9a-f]{32})"`)
)

// withRealLeases puts into a command on an item the lease the daemon last
// handed out for that item, in place of the document's.
func withRealLeases(script string, leases map[string]string) string {
	for _, m := range leaseUse.FindAllStringSubmatch(script, -1) {
		if real, ok := leases[m[1]]; ok {
			script = strings.ReplaceAll(script, m[2], real)
		}
	}
	return script
}

func TestDocsShellBlocksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	needTools(t, "bash", "curl", "jq", "python3")
	bin, binDir := buildHostguard(t)
	t.Run("api.md", func(t *testing.T) { apiShellBlocks(t, bin, binDir) })
	t.Run("README.md", func(t *testing.T) { readmeShellBlocks(t, bin, binDir) })
}

// apiConfig is the daemon docs/api.md's examples were taken from: the
// budget sources and the feed they name. indexer.example's pace is long
// enough that the search right after its head poll is refused on the
// slowest machine, as the document shows.
const apiConfig = `{
  "budget": {"sources": [{"name": "indexer.example", "pace": "10m"}, {"name": "nzbindexer", "owner_daily_limit": 1000}]},
  "feeds": [{"name": "nzbindexer", "url": "http://127.0.0.1:9/api", "api_key_env": "NZBINDEXER_API_KEY"}],
  "evidence": {"fingerprint": "policy-1"}
}`

func apiShellBlocks(t *testing.T, bin, binDir string) {
	cfg := filepath.Join(t.TempDir(), "hostguard.json")
	if err := os.WriteFile(cfg, []byte(apiConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"NZBINDEXER_API_KEY=key-of-the-test"}
	d := startDocDaemon(t, bin, env, "--allow-private", "--config", cfg)
	const token = "token-of-the-docs-test-0123456789"
	withToken := startDocDaemon(t, bin, append(env, "HOSTGUARD_TOKEN="+token), "--config", cfg)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.RequestURI())
	}))
	t.Cleanup(upstream.Close)
	tlsURL, caFile := tlsHostOn(t, "127.0.0.1")
	sh := newShellEnv(t, binDir, "CURL_CA_BUNDLE="+caFile)

	values, leases := map[string]string{}, map[string]string{}
	fences := docFences(t, "docs/api.md")
	for i, f := range fences {
		if f.lang != "sh" {
			continue
		}
		where := fmt.Sprintf("docs/api.md:%d", f.line)
		var answer *fence
		if i+1 < len(fences) && fences[i+1].line == f.last+1 {
			answer = &fences[i+1]
		}
		exact, failure := wantStatuses(f.text, answer)
		daemon, script, setup := d, f.text, ""
		switch {
		case strings.Contains(script, "token=TOKEN"):
			daemon, script = withToken, strings.ReplaceAll(script, "TOKEN", token)
		case strings.Contains(script, "https://example.org/"):
			// The first through the proxy to a TLS host, the second refused.
			script = strings.ReplaceAll(script, "https://example.org/", tlsURL+"/")
			exact = []int{200, 502}
		case strings.Contains(script, "/v1/fetch?url=$("):
			script = strings.ReplaceAll(script, "https://api.example.com/v2/items?page=3", upstream.URL+"/v2/items?page=3")
		case strings.Contains(script, "/v1/hosts/good.example"):
			// The document's host answered a request earlier.
			setup = `command curl -s -o /dev/null -H 'Content-Type: application/json' -X POST http://127.0.0.1:7411/v1/hosts/good.example/touch -d '{"ok":true}'` + "\n"
		case strings.Contains(script, "/v1/guard/report"):
			// The document reports a ticket of its own: take one.
			ticket := regexp.MustCompile(`"ticket":"([0-9a-f]{32})"`).FindStringSubmatch(script)
			if ticket != nil {
				setup = `T=$(command curl -s -H 'Content-Type: application/json' -X POST http://127.0.0.1:7411/v1/guard/acquire -d '{"url":"https://api.example.com/"}' | jq -r .ticket)` + "\n"
				script = strings.ReplaceAll(script, ticket[1], `'"$T"'`)
			}
		}
		for doc, real := range values {
			script = strings.ReplaceAll(script, doc, real)
		}
		script = withRealLeases(script, leases)
		r := sh.run(daemon.rewrite(setup + script))
		if r.err != nil {
			t.Errorf("%s: the block failed: %v\nstdout: %s\nstderr: %s", where, r.err, r.stdout, r.stderr)
			continue
		}
		checkCalls(t, where, r, exact, failure)
		if answer != nil {
			carry(answer.text, r.stdout, values)
		}
		for _, m := range leaseOf.FindAllStringSubmatch(r.stdout, -1) {
			leases[m[1]] = m[2]
		}
	}
}

func readmeShellBlocks(t *testing.T, bin, binDir string) {
	d := startDocDaemon(t, bin, nil, "--allow-private")
	// 127.0.0.2: a loopback host that no_proxy=127.0.0.1,localhost does
	// not send around the proxy, standing in for a host on the internet.
	tlsURL, caFile := tlsHostOn(t, "127.0.0.2")
	fences := docFences(t, "README.md")
	for i, f := range fences {
		if f.lang != "sh" {
			continue
		}
		where := fmt.Sprintf("README.md:%d", f.line)
		var lines []string
		var skipped []string
		for _, line := range strings.Split(f.text, "\n") {
			// The binary is built from this tree, as go run would.
			if rest, ok := strings.CutPrefix(line, "go run ./cmd/hostguard "); ok {
				line = "hostguard " + rest
			}
			if why := skippedCommand(line); why != "" {
				skipped = append(skipped, strings.TrimSpace(line)+" ("+why+")")
				line = ": " + strings.Fields(line)[0] + " skipped"
			}
			lines = append(lines, line)
		}
		// The Quick start's `go run ./cmd/hostguard` builds the binary the
		// test already built: run that one.
		script := strings.ReplaceAll(strings.Join(lines, "\n"), "go run ./cmd/hostguard ", "hostguard ")
		for _, s := range skipped {
			t.Logf("%s: not run: %s", where, s)
		}
		if !hasCommand(script) {
			continue
		}
		sh := newShellEnv(t, binDir, "CURL_CA_BUNDLE="+caFile)
		if strings.Contains(script, "--config hostguard.json") {
			// The configuration file is the JSON block just before.
			if i == 0 || fences[i-1].lang != "json" {
				t.Fatalf("%s: no JSON block before the one that reads hostguard.json", where)
			}
			if err := os.WriteFile(filepath.Join(sh.dir, "hostguard.json"), []byte(fences[i-1].text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		script = strings.ReplaceAll(script, "https://example.org/", tlsURL+"/")
		if strings.Contains(script, "while true") {
			readmeWorkerLoop(t, where, bin, d, sh, script)
			continue
		}
		r := sh.run(d.rewrite(script))
		if r.err != nil {
			t.Errorf("%s: the block failed: %v\nstdout: %s\nstderr: %s", where, r.err, r.stdout, r.stderr)
			continue
		}
		for _, c := range r.calls {
			if c.code < 200 || c.code >= 300 {
				t.Errorf("%s: %s answered %d\nstdout: %s\nstderr: %s", where, c.url, c.code, r.stdout, r.stderr)
			}
			if strings.HasPrefix(c.url, "https://127.0.0.2") && c.connect != 200 {
				t.Errorf("%s: %s did not go through the proxy (CONNECT answered %d)", where, c.url, c.connect)
			}
		}
	}
}

func hasCommand(script string) bool {
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, ": ") {
			return true
		}
	}
	return false
}

// readmeWorkerLoop runs the README's worker loop until it has done its two
// jobs, and again against a daemon that refuses it (a token it lacks),
// where it must pause between claims instead of spinning.
func readmeWorkerLoop(t *testing.T, where, bin string, d docDaemon, sh *shellEnv, script string) {
	done := func(id string) bool {
		resp, err := http.Get("http://" + d.api + "/v1/items/" + id)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var it struct{ State string }
		return json.NewDecoder(resp.Body).Decode(&it) == nil && it.State == "done"
	}
	r := sh.runUntil(d.rewrite(script), "both jobs done", func(shellRun) bool { return done("job-1") && done("job-2") })
	if r.err != nil {
		t.Errorf("%s: %v\nstdout: %s\nstderr: %s", where, r.err, r.stdout, r.stderr)
	}
	for _, c := range r.calls {
		if c.code < 200 || c.code >= 300 {
			t.Errorf("%s: %s answered %d", where, c.url, c.code)
		}
	}

	refusing := startDocDaemon(t, bin, []string{"HOSTGUARD_TOKEN=a-token-the-loop-does-not-have-0123"})
	claims := func(r shellRun) int {
		n := 0
		for _, c := range r.calls {
			if strings.HasSuffix(c.url, "/v1/items/claim") {
				n++
			}
		}
		return n
	}
	r = newShellEnv(t, sh.binDir).runUntil(refusing.rewrite(script), "three pauses",
		func(r shellRun) bool { return r.sleeps >= 3 || claims(r) > 20 })
	if r.err != nil {
		t.Errorf("%s against a refusing daemon: %v\nstderr: %s", where, r.err, r.stderr)
	}
	if n := claims(r); r.sleeps < 3 || n > r.sleeps+1 {
		t.Errorf("%s: against a daemon that refuses it, the loop claimed %d times and paused %d times: it spins", where, n, r.sleeps)
	}
}
