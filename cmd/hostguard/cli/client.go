package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// ExitRefused is returned when the daemon answered but said no: bad input,
// an unknown ticket or item, a wrong token, or an open endpoint (a
// fast-fail). Scripts can tell it apart from ExitError, which means the
// daemon could not be reached or failed on its side.
const ExitRefused = 3

// defaultAddr is where `hostguard serve` listens with no flags.
const defaultAddr = "http://127.0.0.1:7411"

// clientFlags are the flags shared by every command that talks to a
// running daemon.
type clientFlags struct {
	addr    string
	token   string
	json    bool
	utc     bool
	timeout time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", envOr("HOSTGUARD_ADDR", defaultAddr), "daemon `URL` (env HOSTGUARD_ADDR)")
	fs.StringVar(&c.token, "token", os.Getenv("HOSTGUARD_TOKEN"), "bearer `token` for the daemon (env HOSTGUARD_TOKEN)")
	fs.BoolVar(&c.json, "json", false, "print the daemon's JSON answer instead of a table; errors are JSON too")
	fs.BoolVar(&c.utc, "utc", false, "show times in UTC instead of the local time zone")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up on the daemon after this `duration`")
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// daemonCommand is a command that talks to a running daemon: its flag set,
// which holds the flags every such command shares, and the writers it
// prints to. A command adds its own flags to fs before parse.
type daemonCommand struct {
	name   string // the words after "hostguard", as messages name the command
	fs     *flag.FlagSet
	flags  clientFlags
	stdout io.Writer
	stderr io.Writer
}

// newDaemonCommand makes a daemonCommand; its usage names the command and
// its positional arguments (see newFlagSet).
func newDaemonCommand(name, argsUsage, summary string, stdout, stderr io.Writer) *daemonCommand {
	c := &daemonCommand{name: name, fs: newFlagSet(name, argsUsage, summary, stderr), stdout: stdout, stderr: stderr}
	c.flags.register(c.fs)
	return c
}

// parse is parseFlags over the command's flag set.
func (c *daemonCommand) parse(args []string) (pos []string, code int, ok bool) {
	pos, code, ok = parseFlags(c.fs, args, c.stdout)
	if ok {
		display = newDisplay(c.flags.utc)
	}
	return pos, code, ok
}

// usageError is usageError for the command; under --json the complaint is
// a JSON object (see jsonError).
func (c *daemonCommand) usageError(format string, args ...any) int {
	if c.flags.json {
		writeJSONError(c.stderr, fmt.Sprintf(format, args...), "", 0)
		return ExitUsage
	}
	return usageError(c.stderr, c.fs, format, args...)
}

// refuse rejects an argument the daemon would refuse (a bad name, a URL
// that is not http or https) before anything is sent, with the exit code
// the daemon's own refusal would give.
func (c *daemonCommand) refuse(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if c.flags.json {
		writeJSONError(c.stderr, msg, "", 0)
	} else {
		fmt.Fprintf(c.stderr, "hostguard %s: %s\n", c.name, msg)
	}
	return ExitRefused
}

// fail is fail for the command; under --json the error is a JSON object.
func (c *daemonCommand) fail(err error) int {
	code := exitFor(err)
	if !c.flags.json {
		fmt.Fprintf(c.stderr, "hostguard %s: %v\n", c.name, err)
		return code
	}
	var ae *apiError
	if errors.As(err, &ae) {
		writeJSONError(c.stderr, ae.Error(), ae.Field, ae.Status)
	} else {
		writeJSONError(c.stderr, err.Error(), "", 0)
	}
	return code
}

// jsonError is how an error is printed under --json, one object a line on
// stderr, so that stdout holds only answers: status is the daemon's HTTP
// status (absent when the daemon was not reached or not asked), field the
// input the daemon blamed.
type jsonError struct {
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
	Status int    `json:"status,omitempty"`
}

func writeJSONError(w io.Writer, msg, field string, status int) {
	_ = json.NewEncoder(w).Encode(jsonError{Error: msg, Field: field, Status: status})
}

// call sends one request to the daemon (see client.do) and returns the
// answer's bytes. When the flags name no usable daemon, or the request
// fails, it says why on stderr and returns ok false and the exit code.
func (c *daemonCommand) call(method, path string, query url.Values, in, out any) (raw []byte, code int, ok bool) {
	cl, err := c.flags.client()
	if err != nil {
		return nil, c.usageError("%v", err), false
	}
	if err := cl.do(context.Background(), method, path, query, in, out, &raw); err != nil {
		return nil, c.fail(err), false
	}
	return raw, ExitOK, true
}

// fetch is call for a command whose --json prints the daemon's answer as
// it came. It returns done true when the command has nothing left to do:
// the call failed (code says how) or --json printed the answer (code
// ExitOK). Otherwise out holds the answer, for the command to print for
// people.
func (c *daemonCommand) fetch(method, path string, query url.Values, in, out any) (code int, done bool) {
	raw, code, ok := c.call(method, path, query, in, out)
	if !ok {
		return code, true
	}
	if c.flags.json {
		printRaw(c.stdout, raw)
		return ExitOK, true
	}
	return ExitOK, false
}

// client returns an API client for the flags, or a usage error.
func (c *clientFlags) client() (*client, error) {
	raw := strings.TrimSpace(c.addr)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--addr %q is not an http:// or https:// address of the daemon", c.addr)
	}
	if u.User != nil {
		return nil, errors.New("--addr must not carry credentials; use --token")
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, not %s", c.timeout)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &client{base: u, token: c.token, hc: &http.Client{Timeout: c.timeout}}, nil
}

// client talks to the daemon's JSON API.
type client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// apiError is a non-2xx answer from the daemon.
type apiError struct {
	Status     int
	Message    string `json:"error"`
	Field      string `json:"field"`
	Endpoint   string `json:"endpoint"`
	RetryAfter *int64 `json:"retry_after_seconds"`
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("daemon answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.RetryAfter != nil {
		msg += fmt.Sprintf(" (retry after %ds)", *e.RetryAfter)
	}
	return msg
}

// do sends in (if not nil) as JSON and decodes the answer into out (if not
// nil). raw, when not nil, receives the answer's bytes for --json.
func (c *client) do(ctx context.Context, method, path string, query url.Values, in, out any, raw *[]byte) error {
	// path arrives with its segments already escaped (an item id may hold
	// a slash), so the URL is built as text rather than through url.URL.Path.
	target := c.base.String() + path
	if q := query.Encode(); q != "" {
		target += "?" + q
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The url.Error names our own daemon's address, which carries
		// no credentials (client refuses userinfo), so it may be shown.
		return fmt.Errorf("cannot reach the daemon: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &apiError{Status: resp.StatusCode}
		_ = json.Unmarshal(b, e)
		return e
	}
	if raw != nil {
		*raw = b
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("the daemon's answer is not the JSON expected: %w", err)
		}
	}
	return nil
}

// fail prints err for a person and returns the exit code a script can
// branch on.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "hostguard %s: %v\n", cmd, err)
	return exitFor(err)
}

// exitFor is the exit code for err: ExitRefused when the daemon said no.
func exitFor(err error) int {
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status/100 == 4 || ae.Status == http.StatusServiceUnavailable) {
		return ExitRefused
	}
	return ExitError
}

// parseFlags parses args, letting flags and positional arguments mix
// (`hostguard reset URL --json`), which the flag package alone does not.
// It returns the positional arguments and, when parsing should stop the
// command, the exit code. Asked for with -h or --help, the usage goes to
// stdout (so that `hostguard status --help | less` works) and the code is
// ExitOK; a bad flag's complaint and usage go to the flag set's output.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (pos []string, code int, ok bool) {
	out := fs.Output()
	defer fs.SetOutput(out)
	for {
		var buf bytes.Buffer
		fs.SetOutput(&buf)
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				stdout.Write(buf.Bytes())
				return nil, ExitOK, false
			}
			out.Write(buf.Bytes())
			return nil, ExitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet makes a flag set whose usage names the command and its
// positional arguments.
func newFlagSet(name, argsUsage, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hostguard "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: hostguard %s [flags] %s\n\n%s\n\nflags:\n", name, argsUsage, summary)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\nexit codes: %d ok, %d error (daemon unreachable or failed), %d usage, %d refused by the daemon (bad input, not found, unauthorized, open endpoint)\n",
			ExitOK, ExitError, ExitUsage, ExitRefused)
	}
	return fs
}

// usageError prints a one-line usage complaint and returns ExitUsage.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fmt.Fprintf(stderr, "run '%s --help' for usage\n", fs.Name())
	return ExitUsage
}

// printRaw writes the daemon's JSON answer for --json, one value a line.
func printRaw(w io.Writer, b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		b = []byte("{}")
	}
	w.Write(b)
	fmt.Fprintln(w)
}
