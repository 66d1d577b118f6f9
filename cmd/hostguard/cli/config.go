package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/strictjson"
	"github.com/hostguard/hostguard/server"
)

// maxConfigBytes bounds the configuration file: it is read whole.
const maxConfigBytes = 1 << 20

// The file's lists have mirror types, because the file spells some values
// differently from the libraries: durations and shares as strings, a
// feed's key as the name of a variable.
type sourceFile struct {
	Name               string  `json:"name"`
	OwnerDailyLimit    *int64  `json:"owner_daily_limit"`
	ReportedDailyLimit *int64  `json:"reported_daily_limit"`
	Share              string  `json:"share"`
	ReservePercent     *int64  `json:"reserve_percent"`
	Pace               *string `json:"pace"`
}

type feedFile struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	APIKey     string `json:"api_key"`
	APIKeyEnv  string `json:"api_key_env"`
	Categories []int  `json:"categories"`
	PageSize   int    `json:"page_size"`
	MaxPages   int    `json:"max_pages"`
	CatchUp    int    `json:"catch_up"`
	KeepItems  int    `json:"keep_items"`
}

// loadFile reads the configuration file at s.config into s. getenv
// resolves api_key_env.
func (s *settings) loadFile(getenv func(string) (string, bool)) error {
	f, err := os.Open(s.config)
	if err != nil {
		return fmt.Errorf("reading the configuration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return fmt.Errorf("reading the configuration: %w", err)
	}
	if len(data) > maxConfigBytes {
		return fmt.Errorf("configuration %s is larger than %d bytes", s.config, maxConfigBytes)
	}
	if err := s.decodeFile(data, getenv); err != nil {
		return fmt.Errorf("configuration %s: %w", s.config, err)
	}
	if fi, err := f.Stat(); err == nil {
		s.configMode = fi.Mode().Perm()
		s.looseKey = s.inlineKey && s.configMode&0o077 != 0
	}
	return nil
}

// checkConfigMode refuses a configuration file that its group or others
// may write: whoever can write it decides what the daemon allows (private
// destinations, allowed hosts, feeds and their keys), and a reload picks
// up their change. --accept-writable-config (or its variable) lets the
// operator say that this is known and wanted; the file cannot say it of
// itself.
func (s *settings) checkConfigMode() error {
	if s.config == "" || runtime.GOOS == "windows" {
		return nil
	}
	if s.from["accept_writable_config"] == fromFile {
		return &settingError{setting: "accept_writable_config",
			reason: "cannot be set in the configuration file it would vouch for; use --accept-writable-config or HOSTGUARD_ACCEPT_WRITABLE_CONFIG"}
	}
	if s.configMode&0o022 == 0 || s.acceptWritableConfig {
		return nil
	}
	who := "its group"
	switch {
	case s.configMode&0o022 == 0o022:
		who = "its group and others"
	case s.configMode&0o002 != 0:
		who = "others"
	}
	return fmt.Errorf("configuration %s is writable by %s (mode %04o), who could change what the daemon allows; "+
		"run chmod go-w on it, or pass --accept-writable-config if that is intended", s.config, who, s.configMode)
}

// decodeFile reads a configuration file's bytes into s. Errors name the
// setting at fault and never carry an API key or a feed URL, which may
// hold credentials.
func (s *settings) decodeFile(data []byte, getenv func(string) (string, bool)) error {
	var top map[string]json.RawMessage
	if err := strictjson.Decode(data, &top); err != nil {
		return fileError(data, err)
	}
	return s.decodeObject("", top, getenv)
}

// decodeObject reads the members of the object at path: an option, one of
// the file's lists, or a section holding more.
func (s *settings) decodeObject(path string, members map[string]json.RawMessage, getenv func(string) (string, bool)) error {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		at, raw := joinPath(path, k), members[k]
		var err error
		switch o := optionNamed(at); {
		case o != nil:
			err = s.decodeOption(*o, raw)
		case at == "budget.sources":
			err = s.decodeSources(raw)
		case at == "feeds":
			err = s.decodeFeeds(raw, getenv)
		case at == "postgres":
			// 0.1.0's one setting in this section moved; say where.
			err = &settingError{setting: "postgres.timeout", reason: "is now db_timeout, for both engines"}
		case isSection(at):
			var sub map[string]json.RawMessage
			if err = strictjson.DecodeAt(at, raw, &sub); err == nil {
				err = s.decodeObject(at, sub, getenv)
			}
		default:
			err = &settingError{setting: at, reason: "unknown field"}
		}
		if err != nil {
			return fileError(nil, err)
		}
	}
	return nil
}

// isSection reports whether some setting lies below path.
func isSection(path string) bool {
	for _, o := range options {
		if strings.HasPrefix(o.name, path+".") {
			return true
		}
	}
	return false
}

// decodeOption reads one option's value into its library field.
func (s *settings) decodeOption(o option, raw json.RawMessage) error {
	field := o.field(s)
	if d, ok := field.(*time.Duration); ok {
		var str *string
		if err := strictjson.DecodeAt(o.name, raw, &str); err != nil || str == nil {
			return err
		}
		v, err := parseDuration(*str)
		if err != nil {
			return &settingError{setting: o.name, reason: fmt.Sprintf("%q %v", *str, err)}
		}
		*d = v
	} else if err := strictjson.DecodeAt(o.name, raw, field); err != nil {
		return err
	}
	s.from[o.name] = fromFile
	return nil
}

func (s *settings) decodeSources(raw json.RawMessage) error {
	var list []sourceFile
	if err := strictjson.DecodeAt("budget.sources", raw, &list); err != nil {
		return err
	}
	for i, f := range list {
		at := fmt.Sprintf("budget.sources[%d]", i)
		src := budget.Source{Name: f.Name, OwnerDailyLimit: f.OwnerDailyLimit,
			ReportedDailyLimit: f.ReportedDailyLimit, ReservePercent: f.ReservePercent}
		share, err := budget.ParseShare(f.Share)
		if err != nil {
			return &settingError{setting: at + ".share", reason: fmt.Sprintf("%q: want gentle, normal or unlimited", f.Share)}
		}
		src.Share = share
		if f.Pace != nil {
			// The file spells "no pacing" as "0s", and leaves the setting
			// out for the default.
			pace, err := parseDuration(*f.Pace)
			switch {
			case err != nil:
				return &settingError{setting: at + ".pace", reason: fmt.Sprintf("%q %v", *f.Pace, err)}
			case pace < 0:
				return &settingError{setting: at + ".pace", reason: fmt.Sprintf("%v: want \"0s\" (no pacing) or more", pace)}
			case pace == 0:
				src.Pace = budget.NoPace
			default:
				src.Pace = pace
			}
		}
		s.budget.Sources = append(s.budget.Sources, src)
	}
	return nil
}

// decodeFeeds reads the feeds and resolves their keys. The server checks
// the rest of each feed (validate asks it), and newznab its categories when
// the server builds the client.
func (s *settings) decodeFeeds(raw json.RawMessage, getenv func(string) (string, bool)) error {
	var list []feedFile
	if err := strictjson.DecodeAt("feeds", raw, &list); err != nil {
		return err
	}
	for i, f := range list {
		at := fmt.Sprintf("feeds[%d]", i)
		bad := func(field, format string, args ...any) error {
			return &settingError{setting: joinPath(at, field), reason: fmt.Sprintf(format, args...)}
		}
		if err := budget.ValidateSourceName(f.Name); err != nil {
			// A feed is paid from the budget source of its name.
			field, reason, _ := server.InputField(err)
			return bad(field, "%s", reason)
		}
		key := f.APIKey
		switch {
		case f.APIKey != "" && f.APIKeyEnv != "":
			return bad("", "give api_key or api_key_env, not both")
		case f.APIKeyEnv != "":
			if !validEnvName(f.APIKeyEnv) {
				return bad("api_key_env", "%q is not an environment variable name", f.APIKeyEnv)
			}
			v, ok := getenv(f.APIKeyEnv)
			if !ok || v == "" {
				return bad("api_key_env", "environment variable %s is not set", f.APIKeyEnv)
			}
			key = v
		case f.APIKey != "":
			s.inlineKey = true
		}
		for j, cat := range f.Categories {
			if cat < 0 {
				// newznab refuses it too, but only once the daemon runs.
				return bad(fmt.Sprintf("categories[%d]", j), "%d: category ids are 0 or more", cat)
			}
		}
		s.server.Feeds = append(s.server.Feeds, server.Feed{Name: f.Name, URL: f.URL, APIKey: key, Categories: f.Categories,
			PageSize: f.PageSize, MaxPages: f.MaxPages, CatchUp: f.CatchUp, KeepItems: f.KeepItems})
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'A' && r <= 'Z') && !(r >= 'a' && r <= 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// fileError turns the strict decoder's error into a setting error; data,
// when given, is the whole file, to place a syntax error by line.
func fileError(data []byte, err error) error {
	e, ok := errors.AsType[*strictjson.Error](err)
	if !ok {
		return err
	}
	if e.Syntax && data != nil {
		line, col := strictjson.Position(data, e.Offset)
		return &settingError{setting: e.Path, reason: fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, e.Reason)}
	}
	if e.Path == "" {
		return &settingError{reason: "the file " + e.Reason}
	}
	return &settingError{setting: e.Path, reason: e.Reason}
}

// dbPasswordWarning is what to warn about at start when the store's DSN
// carries a password where others can read it: on the command line, which
// every user of the machine sees in the process list, or in a file others
// may read. "" when there is nothing to say. It never quotes the DSN.
func (s *settings) dbPasswordWarning() string {
	if !dsnHasPassword(s.db) {
		return ""
	}
	switch {
	case s.from["db"] == fromFlag:
		return "hostguard: --db carries a password, which every user of this machine can read in the process list; give the store in HOSTGUARD_DB instead"
	case s.from["db"] == fromFile && s.configMode&0o077 != 0:
		return "hostguard: the configuration file's db carries a password and others may read the file; give the store in HOSTGUARD_DB, or chmod 600 the file"
	}
	return ""
}

// dsnHasPassword reports whether a postgres:// DSN carries a password, in
// its user info or as the password parameter.
func dsnHasPassword(dsn string) bool {
	d := strings.TrimSpace(dsn)
	if !strings.HasPrefix(d, "postgres://") && !strings.HasPrefix(d, "postgresql://") {
		return false
	}
	u, err := url.Parse(d)
	if err != nil {
		// Unparsable, so look at it as text: user:password@ before the host.
		rest := d[strings.Index(d, "://")+3:]
		at := strings.LastIndex(rest, "@")
		return at > 0 && strings.Contains(rest[:at], ":") || strings.Contains(strings.ToLower(d), "password=")
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return u.Query().Has("password")
}

// shortToken is the token length below which serve warns: the count of
// wrong tokens never refuses the right one, so it cannot slow a guesser,
// and the token's length is what stands against guessing. 16 random
// characters are 64 bits or more.
const shortToken = 16

// tokenWarning is what to warn about at start when the token is short,
// or "". It never quotes the token.
func (s *settings) tokenWarning() string {
	n := len(s.server.Token)
	if n == 0 || n >= shortToken {
		return ""
	}
	return fmt.Sprintf("hostguard: the token is only %d characters long; wrong tokens are counted but a guesser is not slowed, so use a long random one (openssl rand -hex 32)", n)
}
