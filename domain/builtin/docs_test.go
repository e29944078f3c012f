package builtin_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README is short and sends its reader to docs/ (issue 36): every
// relative link of the top-level pages and of docs/ must reach a file,
// and a link to a heading of a Markdown page must reach a heading that
// page has, or a newcomer walking the docs meets a dead end.
func TestDocsLinksResolve(t *testing.T) {
	root := "../.."
	pages := []string{"README.md", "BENCHMARKS.md", "RELIABILITY.md", "clients/python/README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			pages = append(pages, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // page (relative to root) -> heading anchors
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		raw, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		anchors[page] = headingAnchors(string(raw))
		return anchors[page]
	}
	links := 0
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range relativeLinks(string(raw)) {
			links++
			file, frag, _ := strings.Cut(target, "#")
			dest := page // a bare "#anchor" is a heading of this page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
				t.Errorf("%s: link %q: no file %s", page, target, dest)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
				t.Errorf("%s: link %q: %s has no heading with the anchor %q", page, target, dest, frag)
			}
		}
	}
	if links < 20 {
		t.Fatalf("found only %d relative links in %d pages: the link pattern no longer matches", links, len(pages))
	}
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// relativeLinks lists the targets of the Markdown links of text that
// are neither absolute URLs nor inside code.
func relativeLinks(text string) []string {
	var out []string
	for _, line := range proseLines(text) {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, target)
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives the headings of text:
// lowercased, punctuation but '-' and '_' dropped, spaces made '-', and
// "-1", "-2", ... after the first of equal ones.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.ReplaceAll(m[1], "`", "")) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// proseLines are the lines of text outside fenced and indented code.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		out = append(out, line)
	}
	return out
}
