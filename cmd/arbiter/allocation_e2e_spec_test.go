//go:build unix

package main

// An outsider's implementation of allocation-window-conflict-keys.txt
// section 2.1 (tokens, normalize_title, the charter-index bind), 2.2 (note
// targets) and 3 (the window's processing order), written from the spec
// and issue 14's decisions without package allocation: the end-to-end
// test checks the servers against it. It works in sets and big.Rat, where
// the servers use sorted slices and integer cross-multiplication.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// e2eCatalogRow is one row of a space's charter catalog, as sent.
type e2eCatalogRow struct {
	WorkItemID     string   `json:"work_item_id"`
	CanonicalTitle string   `json:"canonical_title"`
	Aliases        []string `json:"aliases"`
}

// e2eTokens is section 2.1 step 2: NFC, default case folding, every rune
// outside letters, marks, numbers and '_' a separator, stopwords dropped,
// as a set.
func e2eTokens(s string) map[string]bool {
	folded := cases.Fold().String(norm.NFC.String(s))
	words := strings.FieldsFunc(folded, func(r rune) bool {
		return r != '_' && !unicode.In(r, unicode.L, unicode.M, unicode.N)
	})
	set := map[string]bool{}
	for _, w := range words {
		switch w {
		case "a", "an", "the", "of", "and", "to", "for":
			continue
		}
		set[w] = true
	}
	return set
}

// e2eNormalizeTitle is normalize_title: NFC, trim, whitespace runs to one
// ASCII space, default case folding.
func e2eNormalizeTitle(s string) string {
	return cases.Fold().String(strings.Join(strings.Fields(norm.NFC.String(s)), " "))
}

// e2eScore is one row's Jaccard figure as counts.
type e2eScore struct {
	WorkItemID   string `json:"work_item_id"`
	Intersection int    `json:"intersection"`
	Union        int    `json:"union"`
}

// e2eBind is the charter-index bind: each row's bag is the union of its
// phrases' tokens; j = |title ∩ bag| / |title ∪ bag|; the best row binds
// when j >= 0.35 and it leads the next best by at least 0.08 (so a tie
// never binds). It returns the bound work item ("" for none) and every
// row's score, in catalog order.
func e2eBind(title string, catalog []e2eCatalogRow) (string, []e2eScore) {
	words := e2eTokens(title)
	scores := make([]e2eScore, len(catalog))
	js := make([]*big.Rat, len(catalog))
	for i, row := range catalog {
		bag := e2eTokens(row.CanonicalTitle)
		for _, alias := range row.Aliases {
			for w := range e2eTokens(alias) {
				bag[w] = true
			}
		}
		union := map[string]bool{}
		inter := 0
		for w := range bag {
			union[w] = true
		}
		for w := range words {
			if bag[w] {
				inter++
			}
			union[w] = true
		}
		scores[i] = e2eScore{WorkItemID: row.WorkItemID, Intersection: inter, Union: len(union)}
		js[i] = big.NewRat(int64(inter), int64(len(union)))
	}
	order := make([]int, len(js))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return js[order[a]].Cmp(js[order[b]]) > 0 })
	if len(order) == 0 {
		return "", scores
	}
	best, second := js[order[0]], new(big.Rat)
	if len(order) > 1 {
		second = js[order[1]]
	}
	lead := new(big.Rat).Sub(best, second)
	if best.Cmp(big.NewRat(35, 100)) >= 0 && lead.Cmp(big.NewRat(8, 100)) >= 0 {
		return catalog[order[0]].WorkItemID, scores
	}
	return "", scores
}

// e2eTaskTarget is a create_task target in space: the slot of the bound
// (or given) work item, else the normalized title.
func e2eTaskTarget(space, title, workItem string) string {
	if workItem != "" {
		return "task:" + space + ":slot:" + workItem
	}
	return "task:" + space + ":" + e2eNormalizeTitle(title)
}

// e2eNoteTarget is a post_review_note target (section 2.2): the body
// normalized by NFC, trim and whitespace collapsing, no case folding.
func e2eNoteTarget(space string, task int, criterion *int, principal, body string) string {
	crit := "none"
	if criterion != nil {
		crit = fmt.Sprint(*criterion)
	}
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(norm.NFC.String(body)), " ")))
	return fmt.Sprintf("note:%s:task:%d:criterion:%s:principal:%s:body:%s", space, task, crit, principal, hex.EncodeToString(sum[:])[:16])
}

// e2ePayloadSHA256 is a window proposal's payload_sha256: the SHA-256 of
// its canonical JSON (compact, keys sorted, no HTML escaping; the fields
// sent, and only those).
func e2ePayloadSHA256(proposal map[string]any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(proposal); err != nil { // a map's keys come out sorted
		panic(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// e2eWindowOrder is the order a window processes its proposals in:
// received_seq ascending (absent: 0), then payload_sha256 ascending.
func e2eWindowOrder(proposals []map[string]any) []map[string]any {
	out := append([]map[string]any(nil), proposals...)
	seq := func(p map[string]any) int {
		if s, ok := p["received_seq"].(int); ok {
			return s
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		if si, sj := seq(out[i]), seq(out[j]); si != sj {
			return si < sj
		}
		return e2ePayloadSHA256(out[i]) < e2ePayloadSHA256(out[j])
	})
	return out
}
