package builtin_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// snippetImports are the packages a Go snippet of the docs may name, by
// the name it uses: the snippet checker imports those it uses.
var snippetImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "os": "os", "time": "time", "testing": "testing",
	"cluster":     "github.com/arbiterhq/arbiter/cluster",
	"clustertest": "github.com/arbiterhq/arbiter/cluster/clustertest",
	"builtin":     "github.com/arbiterhq/arbiter/domain/builtin",
	"client":      "github.com/arbiterhq/arbiter/client",
	"nodes":       "github.com/arbiterhq/arbiter/nodes",
	"capacity":    "github.com/arbiterhq/arbiter/capacity",
	"authority":   "github.com/arbiterhq/arbiter/authority",
	"workitem":    "github.com/arbiterhq/arbiter/workitem",
	"allocation":  "github.com/arbiterhq/arbiter/allocation",
	"projection":  "github.com/arbiterhq/arbiter/projection",
	"errs":        "github.com/arbiterhq/arbiter/errs",
	"fsm":         "github.com/arbiterhq/arbiter/fsm",
	"retry":       "github.com/arbiterhq/arbiter/retry",
	"porcupine":   "github.com/anishathalye/porcupine",
}

// givenRE is the comment a snippet's author puts right before a Go block
// to declare the names the snippet uses without making them, as the
// parameters of the function the snippet is checked in:
// <!-- go-snippet given: svc *capacity.Service, owner string -->
var givenRE = regexp.MustCompile(`<!-- go-snippet given: (.*?) -->\s*$`)

// The Go snippets of the README and docs/ compile against the code
// (issue 43: docs that cannot drift). Each ```go block is type-checked
// as a statement list in a function taking ctx and whatever its
// go-snippet comment gives, or as declarations when it starts with
// func; "..." elisions in composite literals are dropped. Only "declared
// and not used" is forgiven (a snippet shows a call, not its use).
func TestDocSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	type snippet struct{ where, src string }
	var snippets []snippet
	pages := []string{filepath.Join(root, "README.md")}
	_ = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		lines := strings.Split(string(raw), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			given := ""
			if i > 0 {
				if m := givenRE.FindStringSubmatch(lines[i-1]); m != nil {
					given = m[1]
				}
			}
			start := i + 1
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			}
			body := strings.Join(lines[start:i], "\n")
			snippets = append(snippets, snippet{fmt.Sprintf("%s:%d", rel, start+1), wrapSnippet(body, given)})
		}
	}
	if len(snippets) < 3 {
		t.Fatalf("found %d Go snippets in the docs: the scan is broken", len(snippets))
	}

	overlay := map[string][]byte{}
	var patterns []string
	byPkg := map[string]snippet{}
	for i, s := range snippets {
		name := fmt.Sprintf("docsnippet%03d", i)
		file := filepath.Join(root, "internal", name, "snippet.go")
		overlay[file] = []byte(s.src)
		patterns = append(patterns, "file="+file)
		byPkg["github.com/arbiterhq/arbiter/internal/"+name] = s
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo | packages.NeedDeps | packages.NeedImports,
		Dir: root, Overlay: overlay}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range pkgs {
		s, ok := byPkg[p.PkgPath]
		if !ok {
			continue
		}
		checked++
		for _, e := range p.Errors {
			if strings.Contains(e.Msg, "declared and not used") {
				continue
			}
			t.Errorf("%s: %s\n%s", s.where, e.Msg, s.src)
		}
	}
	if checked != len(snippets) {
		t.Fatalf("checked %d of %d snippets", checked, len(snippets))
	}
}

var elisionRE = regexp.MustCompile(`,\s*\.\.\.\s*}`)

// wrapSnippet makes a Go file of a snippet: its imports, and its
// statements in a function of ctx and the given names.
func wrapSnippet(body, given string) string {
	body = elisionRE.ReplaceAllString(body, "}")
	var used []string
	for name, path := range snippetImports {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(body + given) {
			used = append(used, fmt.Sprintf("%q", path))
		}
	}
	sort.Strings(used)
	var b strings.Builder
	b.WriteString("package docsnippet\n\n")
	if len(used) > 0 {
		b.WriteString("import (\n\t" + strings.Join(used, "\n\t") + "\n)\n\n")
	}
	if strings.HasPrefix(strings.TrimSpace(body), "func ") {
		for _, g := range strings.Split(given, ",") {
			if g = strings.TrimSpace(g); g != "" {
				b.WriteString("var " + g + "\n")
			}
		}
		b.WriteString(body + "\n")
		return b.String()
	}
	params := "ctx context.Context"
	if !strings.Contains(strings.Join(used, " "), `"context"`) {
		b.Reset()
		return wrapSnippet("_ = context.Background\n"+body, given)
	}
	if given != "" {
		params += ", " + given
	}
	b.WriteString("func _(" + params + ") error {\n" + body + "\nreturn nil\n}\n")
	return b.String()
}
