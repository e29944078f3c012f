package authority_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// The fixture is production code that embedders link: it drives its
// state machine with the public in-process driver (fsm/fsmtest) and
// imports nothing under internal/, which no program outside this module
// could build on.
func TestFixtureImportsNothingInternal(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "fixture.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Imports) == 0 {
		t.Fatal("fixture.go imports nothing: the parse is broken")
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
			t.Errorf("fixture.go imports %s", path)
		}
	}
}
