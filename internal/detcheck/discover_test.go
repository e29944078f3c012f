package detcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const (
	modulePath = "github.com/arbiterhq/arbiter"
	fsmPath    = modulePath + "/fsm"
)

// alwaysLinted run inside Apply whatever registers commands: the host of
// the state machine and its state store.
var alwaysLinted = []string{"fsm", "internal/statestore"}

// handlerPackages finds, under root, the packages whose code runs inside
// Apply or a query, as ./-relative patterns, sorted: every package whose
// non-test files register commands (registersCommands), every package
// beneath one of those (a domain's own sub-packages, such as
// workitem/extension, which its handlers call), and alwaysLinted. A new
// domain is linted as soon as it registers a command: nobody keeps a
// list.
func handlerPackages(root string) ([]string, error) {
	cfg := &packages.Config{Dir: root, Mode: packages.NeedName | packages.NeedFiles}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	rel := func(p *packages.Package) string {
		if p.PkgPath == modulePath {
			return "."
		}
		return strings.TrimPrefix(p.PkgPath, modulePath+"/")
	}
	var registering []string
	fset := token.NewFileSet()
	for _, p := range pkgs {
		if !strings.HasPrefix(p.PkgPath, modulePath+"/") {
			continue
		}
		for _, name := range p.GoFiles { // GoFiles: no test files
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if registersCommands(f, p.PkgPath) {
				registering = append(registering, rel(p))
				break
			}
		}
	}
	if len(registering) == 0 {
		return nil, fmt.Errorf("no package of %s registers a command: the discovery is broken", root)
	}
	chosen := map[string]bool{}
	for _, p := range alwaysLinted {
		chosen[p] = true
	}
	for _, p := range pkgs {
		r := rel(p)
		for _, reg := range registering {
			if r == reg || strings.HasPrefix(r, reg+"/") {
				chosen[r] = true
			}
		}
	}
	var out []string
	for p := range chosen {
		out = append(out, "./"+filepath.ToSlash(p))
	}
	slices.Sort(out)
	return out, nil
}

// registersCommands reports whether f, a file of package pkgPath,
// registers commands: it names fsm.CommandSpec, or builds an fsm.Module
// with Commands (inside package fsm: CommandSpec, Module).
func registersCommands(f *ast.File, pkgPath string) bool {
	qualifier := ""
	if pkgPath != fsmPath {
		for _, imp := range f.Imports {
			if path, err := strconv.Unquote(imp.Path.Value); err != nil || path != fsmPath {
				continue
			}
			qualifier = "fsm"
			if imp.Name != nil {
				qualifier = imp.Name.Name
			}
		}
		if qualifier == "" || qualifier == "_" || qualifier == "." {
			return false // cannot name the types (a dot import is not used here)
		}
	}
	isFSM := func(e ast.Expr, name string) bool {
		if qualifier == "" {
			id, ok := e.(*ast.Ident)
			return ok && id.Name == name
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != name {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == qualifier
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr, *ast.Ident:
			if isFSM(n.(ast.Expr), "CommandSpec") {
				found = true
			}
		case *ast.CompositeLit:
			if n.Type != nil && isFSM(n.Type, "Module") {
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Commands") {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

// The discovery finds every package the hand-kept list used to name
// (dropping one fails here), and nothing outside the module.
func TestDiscoveryFindsEveryHandlerPackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := handlerPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fsm", "internal/statestore", "nodes", "authority", "capacity", "workitem", "workitem/extension", "allocation", "projection"} {
		if !slices.Contains(got, "./"+want) {
			t.Errorf("the discovery misses %s; it found %v", want, got)
		}
	}
}

// What counts as registering commands, on files of a domain nobody has
// written yet.
func TestRegistersCommands(t *testing.T) {
	cases := []struct {
		name, pkg, src string
		want           bool
	}{
		{"a module with commands", modulePath + "/newdomain", `package newdomain
import "github.com/arbiterhq/arbiter/fsm"
func Module() fsm.Module { return fsm.Module{Name: "newdomain", Commands: commands()} }`, true},
		{"command specs alone", modulePath + "/newdomain", `package newdomain
import f "github.com/arbiterhq/arbiter/fsm"
var specs = []f.CommandSpec{{Type: 900, Name: "x"}}`, true},
		{"the fsm package's own module", fsmPath, `package fsm
func core() Module { return Module{Name: "core", Commands: nil} }`, true},
		{"a module of queries only", modulePath + "/newdomain", `package newdomain
import "github.com/arbiterhq/arbiter/fsm"
func Module() fsm.Module { return fsm.Module{Name: "newdomain"} }`, false},
		{"a service that proposes", modulePath + "/newdomain", `package newdomain
import "github.com/arbiterhq/arbiter/fsm"
func run(p fsm.Proposer) {}`, false},
		{"another package's CommandSpec", modulePath + "/newdomain", `package newdomain
import "example.com/fsm"
var s fsm.CommandSpec`, false},
	}
	for _, c := range cases {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", c.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := registersCommands(f, c.pkg); got != c.want {
			t.Errorf("%s: registersCommands = %v, want %v", c.name, got, c.want)
		}
	}
}
