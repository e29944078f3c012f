package allocation_test

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"unicode"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"pgregory.net/rapid"
)

// refTokens is a deliberately plain second tokenizer: a set (map) of the
// fields left once every rune outside L, M, N and '_' is cut.
func refTokens(s string) map[string]bool {
	s = cases.Fold().String(norm.NFC.String(s))
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r == '_' || unicode.In(r, unicode.L, unicode.M, unicode.N)) }) {
		switch f {
		case "a", "an", "the", "of", "and", "to", "for":
		default:
			out[f] = true
		}
	}
	return out
}

// refBind is the spec's rule with big.Rat: Jaccard per row, the unique
// argmax binds if j ≥ 0.35 and j − second ≥ 0.08.
func refBind(title string, catalog []allocation.CatalogRow) (string, []*big.Rat) {
	tt := refTokens(title)
	var js []*big.Rat
	for _, row := range catalog {
		bag := refTokens(row.CanonicalTitle)
		for _, a := range row.Aliases {
			for k := range refTokens(a) {
				bag[k] = true
			}
		}
		inter, union := 0, len(bag)
		for k := range tt {
			if bag[k] {
				inter++
			} else {
				union++
			}
		}
		js = append(js, big.NewRat(int64(inter), int64(union)))
	}
	best := -1
	for i, j := range js {
		if best < 0 || j.Cmp(js[best]) > 0 {
			best = i
		}
	}
	if best < 0 {
		return "", js
	}
	second := new(big.Rat)
	for i, j := range js {
		if i != best && j.Cmp(second) > 0 {
			second = j
		}
	}
	diff := new(big.Rat).Sub(js[best], second)
	if js[best].Cmp(big.NewRat(35, 100)) >= 0 && diff.Cmp(big.NewRat(8, 100)) >= 0 {
		return catalog[best].WorkItemID, js
	}
	return "", js
}

// words mixes ASCII, accented letters (precomposed and with combining
// marks), other scripts, full-width digits, stopwords and punctuation.
var words = []string{
	"survey", "Survey", "SURVEY", "agents", "loops", "loop", "the", "of", "and", "a", "for",
	"café", "cafe\u0301", "CAFÉ", "Straße", "STRASSE", "ﬁle", "file", "naïve", "nai\u0308ve",
	"Ｔ１", "T1", "t1", "１２３", "123", "٣", "Ⅻ", "multi-agent", "re-entry", "x_y", "x·y",
	"検索", "エージェント", "агент", "Агент", "ΣΊΣΥΦΟΣ", "σίσυφος", "—", "&", "!!", ":", "…", "(loops)",
}

func genPhrase(t *rapid.T, label string) string {
	n := rapid.IntRange(0, 7).Draw(t, label+"_len")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = rapid.SampledFrom(words).Draw(t, label)
	}
	sep := rapid.SampledFrom([]string{" ", "  ", ", ", "\t", "/", " — "}).Draw(t, label+"_sep")
	return strings.Join(parts, sep)
}

// TestBindMatchesReference drives random catalogs and titles through the
// service's bind and compares it with refBind: the same scores as exact
// fractions and the same slot (or none).
func TestBindMatchesReference(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		l, err := fsmtest.New(allocation.Module())
		if err != nil {
			t.Fatal(err)
		}
		s := allocation.NewService(l, l)
		rows := rapid.IntRange(1, 5).Draw(t, "rows")
		var catalog []allocation.CatalogRow
		for i := 0; i < rows; i++ {
			row := allocation.CatalogRow{WorkItemID: fmt.Sprintf("T%d", i+1), CanonicalTitle: genPhrase(t, "canonical")}
			for a := rapid.IntRange(0, 2).Draw(t, "aliases"); a > 0; a-- {
				row.Aliases = append(row.Aliases, genPhrase(t, "alias"))
			}
			if len(refTokens(strings.Join(append(row.Aliases, row.CanonicalTitle), " "))) == 0 {
				row.CanonicalTitle += " anchor" // a row needs a token
			}
			catalog = append(catalog, row)
		}
		if _, err := s.PutSpace(ctx, "s", allocation.PutSpaceRequest{Catalog: catalog}); err != nil {
			t.Fatal(err)
		}
		for n := rapid.IntRange(1, 5).Draw(t, "titles"); n > 0; n-- {
			title := genPhrase(t, "title")
			if rapid.Bool().Draw(t, "borrow") { // titles close to a row bind more often
				title += " " + catalog[rapid.IntRange(0, rows-1).Draw(t, "row")].CanonicalTitle
			}
			res, err := s.Bind(ctx, "s", allocation.BindRequest{Title: title}, 0)
			if strings.TrimFunc(title, unicode.IsSpace) == "" {
				if err == nil {
					t.Fatalf("blank title %q bound", title)
				}
				continue
			}
			if err != nil {
				t.Fatalf("bind %q: %v", title, err)
			}
			wantID, js := refBind(title, catalog)
			for i, sc := range res.Scores {
				if big.NewRat(int64(sc.Intersection), int64(sc.Union)).Cmp(js[i]) != 0 {
					t.Fatalf("%q vs %s: %d/%d, reference %s", title, sc.WorkItemID, sc.Intersection, sc.Union, js[i])
				}
			}
			got := ""
			if res.WorkItemID != nil {
				got = *res.WorkItemID
			}
			if got != wantID {
				t.Fatalf("%q binds %q, reference %q (scores %+v)", title, got, wantID, res.Scores)
			}
			wantTarget := "task:s:" + allocation.NormalizeTitle(title)
			if wantID != "" {
				wantTarget = "task:s:slot:" + wantID
			}
			if res.Target != wantTarget {
				t.Fatalf("%q: target %q, want %q", title, res.Target, wantTarget)
			}
		}
	})
}
