package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	if fi, err := f.Stat(); err == nil && s.inlineKey && fi.Mode().Perm()&0o077 != 0 {
		s.looseKey = true
	}
	return nil
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
