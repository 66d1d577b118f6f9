package hostguard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// fence is one fenced block of a Markdown file: its language, the lines
// its opening and closing fences are on, and its text.
type fence struct {
	lang       string
	line, last int
	text       string
}

// docFences returns every fenced block of the Markdown file at path, in
// order.
func docFences(t *testing.T, path string) []fence {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var out []fence
	var cur *fence
	var text strings.Builder
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fence{lang: strings.TrimPrefix(line, "```"), line: n}
			text.Reset()
		case cur != nil && line == "```":
			cur.last, cur.text = n, text.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			text.WriteString(line + "\n")
		}
	}
	return out
}

// readmeBlocks returns README.md's fenced blocks in language lang, each
// with the line its fence opens on.
func readmeBlocks(t *testing.T, lang string) (blocks []string, lines []int) {
	t.Helper()
	for _, f := range docFences(t, "README.md") {
		if f.lang == lang {
			blocks = append(blocks, f.text)
			lines = append(lines, f.line)
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md has no %s blocks", lang)
	}
	return blocks, lines
}

func TestReadmeJSONParses(t *testing.T) {
	blocks, lines := readmeBlocks(t, "json")
	for i, b := range blocks {
		if !json.Valid([]byte(b)) {
			t.Errorf("README.md:%d: the JSON block does not parse", lines[i])
		}
	}
}

// readmePrelude declares what the README's Go snippets take from their
// surroundings, typed as a program would have them.
const readmePrelude = `package readme

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/transport"
)

var (
	ctx                      context.Context
	st                       hostguard.Store
	b                        *budget.Budget
	host                     string
	hosts                    []string
	infohash, magnet, dhtNode string
	bytesRead                int64
	fetchFrom                func(host string) error
	fetchMetadata            func(ctx context.Context, id string, payload []byte) (peer string, err error)
)
`

// TestReadmeGoTypeChecks type-checks every Go block of README.md as the
// body of a function, against the module's real packages: a renamed
// field or a changed signature fails here. Variables a snippet declares
// for the reader and leaves unused are allowed.
func TestReadmeGoTypeChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds export data for the module's packages")
	}
	blocks, lines := readmeBlocks(t, "go")
	pkgs := []string{"github.com/hostguard/hostguard", "github.com/hostguard/hostguard/budget", "github.com/hostguard/hostguard/client",
		"github.com/hostguard/hostguard/evidence", "github.com/hostguard/hostguard/failure",
		"github.com/hostguard/hostguard/feed", "github.com/hostguard/hostguard/feed/newznab",
		"github.com/hostguard/hostguard/guard", "github.com/hostguard/hostguard/health",
		"github.com/hostguard/hostguard/leader", "github.com/hostguard/hostguard/retry",
		"github.com/hostguard/hostguard/transport"}
	out, err := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(line, "=")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for i, b := range blocks {
		src := readmePrelude + "\nfunc snippet() {\n" + b + "}\n"
		f, err := parser.ParseFile(fset, fmt.Sprintf("README.md:%d", lines[i]), src, 0)
		if err != nil {
			t.Errorf("README.md:%d: the Go block does not parse: %v", lines[i], err)
			continue
		}
		conf := types.Config{Importer: imp, Error: func(err error) {
			msg := err.Error()
			if strings.Contains(msg, "declared and not used") || strings.Contains(msg, "imported and not used") {
				return
			}
			te := err.(types.Error)
			p := fset.Position(te.Pos)
			t.Errorf("README.md:%d: the Go block does not compile: line %d of the block: %s",
				lines[i], p.Line-preludeLines(), te.Msg)
		}}
		_, _ = conf.Check("readme", fset, []*ast.File{f}, nil)
	}
}

// preludeLines is how many lines come before a snippet's first line.
func preludeLines() int { return strings.Count(readmePrelude, "\n") + 2 }
