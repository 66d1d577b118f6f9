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
	"time"

	"github.com/hostguard/hostguard/client"
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
	if ae, ok := errors.AsType[*client.Error](err); ok {
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

// call sends one request to the daemon (see client.Client.Do) and
// returns the answer's bytes, decoded into out when out is not nil. When
// the flags name no usable daemon, or the request fails, it says why on
// stderr and returns ok false and the exit code.
func (c *daemonCommand) call(method, path string, query url.Values, in, out any) (raw []byte, code int, ok bool) {
	cl, err := c.flags.client()
	if err != nil {
		return nil, c.usageError("%v", err), false
	}
	raw, err = cl.Do(context.Background(), method, path, query, in)
	if err == nil && out != nil && len(raw) > 0 {
		if jerr := json.Unmarshal(raw, out); jerr != nil {
			err = fmt.Errorf("the daemon's answer is not the JSON expected: %w", jerr)
		}
	}
	if err != nil {
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

// client returns a client of the daemon the flags name, or a usage
// error.
func (c *clientFlags) client() (*client.Client, error) {
	if c.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, not %s", c.timeout)
	}
	cl, err := client.New(client.Config{Addr: c.addr, Token: c.token, HTTPClient: &http.Client{Timeout: c.timeout}})
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	return cl, nil
}

// fail prints err for a person and returns the exit code a script can
// branch on.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "hostguard %s: %v\n", cmd, err)
	return exitFor(err)
}

// exitFor is the exit code for err: ExitRefused when the daemon said no.
func exitFor(err error) int {
	if ae, ok := errors.AsType[*client.Error](err); ok && (ae.Status/100 == 4 || ae.Status == http.StatusServiceUnavailable) {
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
