package inputerr_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/inputerr"
	"github.com/hostguard/hostguard/retry"
)

// Every package of the module that declares an InputError must give it
// InputField, or the daemon would answer its bad input as a 500. The
// packages are found in the source, so a new one cannot be forgotten.
func TestEveryInputErrorImplementsTheSeam(t *testing.T) {
	root := filepath.Join("..", "..")
	declared := map[string]bool{} // package dir -> has InputField
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == "InputError" {
						declared[dir] = declared[dir] || false
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name == "InputField" && d.Recv != nil && recvIs(d.Recv, "InputError") {
					declared[dir] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) < 10 {
		t.Fatalf("found InputError in only %d packages (%v); the walk is broken", len(declared), declared)
	}
	for dir, ok := range declared {
		if !ok {
			t.Errorf("%s declares InputError without an InputField method", dir)
		}
	}
}

func recvIs(fl *ast.FieldList, name string) bool {
	for _, f := range fl.List {
		if star, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == name {
				return true
			}
		}
	}
	return false
}

func TestFindReadsTheFirstInChain(t *testing.T) {
	err := fmt.Errorf("adding: %w", &retry.InputError{Field: "lease_seconds", Reason: "is -1"})
	field, reason, ok := inputerr.Find(err)
	if !ok || field != "lease_seconds" || reason != "is -1" {
		t.Fatalf("Find = %q, %q, %v", field, reason, ok)
	}
	if _, _, ok := inputerr.Find(errors.New("plain")); ok {
		t.Fatal("Find matched an error that is not input")
	}
	outer := fmt.Errorf("x: %w", errors.Join(&guard.InputError{Field: "window", Reason: "is 0"}))
	if field, _, _ := inputerr.Find(outer); field != "window" {
		t.Fatalf("Find through Join = %q", field)
	}
}
