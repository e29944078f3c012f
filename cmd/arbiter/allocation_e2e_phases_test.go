//go:build unix

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// e2eWords mixes ASCII, accented letters (precomposed and with combining
// marks), other scripts, full-width digits and letters, stopwords and
// punctuation: what tokens and normalize_title must agree on.
var e2eWords = []string{
	"survey", "Survey", "SURVEY", "agents", "loops", "loop", "the", "of", "and", "a", "an", "to", "for",
	"café", "cafe\u0301", "CAFÉ", "Straße", "STRASSE", "ﬁle", "file", "naïve", "nai\u0308ve", "Å", "A\u030a",
	"Ｔ１", "T1", "t1", "１２３", "123", "٣", "Ⅻ", "multi-agent", "re-entry", "x_y", "x·y", "Ｆｉｘ",
	"検索", "エージェント", "агент", "Агент", "ΣΊΣΥΦΟΣ", "σίσυφος", "—", "&", "!!", ":", "…", "(loops)",
}

var e2eSeparators = []string{" ", "  ", ", ", "\t", "/", " — ", "\u00a0", "\u3000"}

func e2ePhrase(rng *rand.Rand, maxWords int) string {
	parts := make([]string, rng.IntN(maxWords+1))
	for i := range parts {
		parts[i] = e2eWords[rng.IntN(len(e2eWords))]
	}
	return strings.Join(parts, e2eSeparators[rng.IntN(len(e2eSeparators))])
}

// e2eAllocRandomCatalogs puts spaces with random catalogs and, for random
// titles (some close to a catalog row, some naming a work item), checks
// POST .../bind against e2eBind exactly (scores as counts, the slot, the
// target), then creates each title: a free target is a 201 task on the
// target this test computed, a held one the spec's 409 naming its task,
// a work item the catalog does not list 422 unknown_work_item.
func e2eAllocRandomCatalogs(ctx context.Context, t *testing.T, cl *e2eCluster, rng *rand.Rand) {
	binds, created, lost := 0, 0, 0
	for s := range 4 {
		space := fmt.Sprintf("rand-%d", s)
		catalog := make([]e2eCatalogRow, 1+rng.IntN(4))
		for i := range catalog {
			row := e2eCatalogRow{WorkItemID: fmt.Sprintf("T%d", i+1), CanonicalTitle: e2ePhrase(rng, 6), Aliases: []string{}}
			for range rng.IntN(3) {
				row.Aliases = append(row.Aliases, e2ePhrase(rng, 4))
			}
			if len(e2eTokens(row.CanonicalTitle+" "+strings.Join(row.Aliases, " "))) == 0 {
				row.CanonicalTitle += " anchor" // the server refuses a row without a token
			}
			catalog[i] = row
		}
		e2ePutSpace(ctx, t, cl, space, catalog)
		holders := map[string]int{} // target -> the task that holds it
		for i := range 20 {
			title := e2ePhrase(rng, 7)
			if rng.IntN(2) == 0 {
				row := catalog[rng.IntN(len(catalog))]
				title += e2eSeparators[rng.IntN(len(e2eSeparators))] + row.CanonicalTitle
			}
			req := map[string]any{"title": title}
			bound, scores := e2eBind(title, catalog)
			unlisted := false
			if rng.IntN(6) == 0 { // a client naming the slot: t0N is TN
				n := 1 + rng.IntN(len(catalog)+1)
				req["work_item_id"], bound = fmt.Sprintf("t0%d", n), fmt.Sprintf("T%d", n)
				unlisted = n > len(catalog)
			}
			nodes := e2eRotate(cl.nodes, s+i)
			what := fmt.Sprintf("%s title %q", space, title)
			r := cl.allocDo(ctx, nodes, http.MethodPost, "/v1/spaces/"+space+"/bind", req, "")
			binds++
			if e2eNormalizeTitle(title) == "" {
				if r.status != http.StatusUnprocessableEntity || e2eErrorCode(r) != "invalid" {
					t.Errorf("bind of blank %s: %v, want 422 invalid", what, r)
				}
				continue
			}
			if unlisted { // a work item the catalog does not list: 422 unknown_work_item, bind and create alike
				req["delivery_mode"] = "result"
				create := cl.allocDo(ctx, nodes, http.MethodPost, "/v1/spaces/"+space+"/tasks", req, fmt.Sprintf("%s-%d", space, i))
				for _, r := range []e2eReply{r, create} {
					if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), `"reason":"unknown_work_item"`) {
						t.Errorf("%s naming %s, not in the catalog: %v, want 422 unknown_work_item", what, bound, r)
					}
				}
				continue
			}
			target := e2eTaskTarget(space, title, bound)
			var got struct {
				WorkItemID *string    `json:"work_item_id"`
				Target     string     `json:"target"`
				Scores     []e2eScore `json:"scores"`
			}
			e2eDecodeReply(t, "bind of "+what, r, http.StatusOK, &got)
			if got.Target != target || !reflect.DeepEqual(got.Scores, scores) || (got.WorkItemID == nil) != (bound == "") ||
				got.WorkItemID != nil && *got.WorkItemID != bound {
				t.Errorf("bind of %s: %v\nwant work item %q, target %q, scores %+v", what, r, bound, target, scores)
				continue
			}
			req["delivery_mode"] = "result"
			r = cl.allocDo(ctx, nodes, http.MethodPost, "/v1/spaces/"+space+"/tasks", req, fmt.Sprintf("%s-%d", space, i))
			if h, held := holders[target]; held {
				e2eWantBody(t, "create of "+what, r, http.StatusConflict, e2eLoserBody(t, target, h))
				lost++
				continue
			}
			holders[target] = e2eWantTask(t, "create of "+what, r, space, title, target, bound).ID
			created++
		}
	}
	t.Logf("random catalogs: %d binds, %d creates, %d losers, all as computed", binds, created, lost)
}

// e2eAllocFixtureRace sends fixture titles concurrently, each through
// another node: the four T1 titles, the three T3 titles, then all seven
// (in the fixture's own space), each in a fresh space. Exactly one 201
// per slot; every loser the spec's 409 naming it; one task per slot.
// The 483 negative: both titles create, on T1 and T3.
func e2eAllocFixtureRace(ctx context.Context, t *testing.T, cl *e2eCluster, fx e2eFixture) {
	for _, g := range []struct {
		space string
		tasks []int
	}{{"mar-t1", []int{91, 92, 93, 94}}, {"mar-t3", []int{95, 96, 97}}, {fx.Space, []int{91, 92, 93, 94, 95, 96, 97}}} {
		e2ePutSpace(ctx, t, cl, g.space, fx.Catalog)
		var titles []string
		var slots []string
		for _, task := range g.tasks {
			for _, ft := range fx.Titles {
				if ft.Task != task {
					continue
				}
				if bound, _ := e2eBind(ft.Title, fx.Catalog); bound != ft.Binds {
					t.Fatalf("this test's bind puts task %d on %q; the fixture says %s", task, bound, ft.Binds)
				}
				titles, slots = append(titles, ft.Title), append(slots, ft.Binds)
			}
		}
		replies := make([]e2eReply, len(titles))
		var wg sync.WaitGroup
		for i, title := range titles {
			wg.Go(func() {
				body := map[string]any{"title": title, "delivery_mode": "result"}
				replies[i] = cl.allocDo(ctx, e2eRotate(cl.nodes, i), http.MethodPost, "/v1/spaces/"+g.space+"/tasks", body, fmt.Sprintf("race-%s-%d", g.space, i))
			})
		}
		wg.Wait()
		winners := map[string]int{}
		for i, r := range replies {
			if r.status == http.StatusCreated {
				target := e2eTaskTarget(g.space, titles[i], slots[i])
				if _, dup := winners[slots[i]]; dup {
					t.Errorf("%s: a second 201 on %s: %v", g.space, slots[i], r)
				}
				winners[slots[i]] = e2eWantTask(t, g.space+" winner", r, g.space, titles[i], target, slots[i]).ID
			}
		}
		for i, r := range replies {
			if r.status != http.StatusCreated {
				target := e2eTaskTarget(g.space, titles[i], slots[i])
				e2eWantBody(t, fmt.Sprintf("%s loser %q", g.space, titles[i]), r, http.StatusConflict, e2eLoserBody(t, target, winners[slots[i]]))
			}
		}
		if tasks := e2eListTasks(ctx, t, cl, cl.nodes, g.space); len(tasks) != len(winners) || len(winners) != len(e2eSet(slots)) {
			t.Errorf("%s: %d tasks and winners %v for slots %v: want one mutation per slot", g.space, len(tasks), winners, e2eSet(slots))
		}
	}
	e2ePutSpace(ctx, t, cl, "neg-483", fx.Catalog)
	for i, n := range fx.Negative483 {
		r := cl.allocDo(ctx, e2eRotate(cl.nodes, i), http.MethodPost, "/v1/spaces/neg-483/tasks", map[string]any{"title": n.Title, "delivery_mode": "result"}, fmt.Sprintf("neg-%d", i))
		e2eWantTask(t, "483 negative", r, "neg-483", n.Title, e2eTaskTarget("neg-483", n.Title, n.Binds), n.Binds)
	}
}

func e2eSet(xs []string) map[string]bool {
	out := map[string]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}

// e2eNamed is the words prefix<from> to prefix<to>.
func e2eNamed(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// e2eAllocBindEdges binds titles built to sit exactly on the bind's
// thresholds, where random titles rarely fall: j = 0.35 binds and
// 7/21 does not; a lead of exactly 0.08 binds and 0.0733 does not; equal
// top scores never bind. The expected slot is written out here, so the
// check does not rest on e2eBind alone.
func e2eAllocBindEdges(ctx context.Context, t *testing.T, cl *e2eCluster) {
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return strings.Join(all, " ")
	}
	common, onlyA, onlyB := e2eNamed("cw", 1, 7), e2eNamed("aw", 1, 5), e2eNamed("bw", 1, 10)
	edge := []e2eCatalogRow{
		{WorkItemID: "T1", CanonicalTitle: join(common, onlyA), Aliases: []string{}},
		{WorkItemID: "T2", CanonicalTitle: join(common, onlyB), Aliases: []string{}},
	}
	tie := []e2eCatalogRow{
		{WorkItemID: "T1", CanonicalTitle: join(e2eNamed("pw", 1, 6)), Aliases: []string{}},
		{WorkItemID: "T2", CanonicalTitle: join(e2eNamed("qw", 1, 6)), Aliases: []string{}},
	}
	for _, tc := range []struct {
		space   string
		catalog []e2eCatalogRow
		title   string
		want    string
	}{
		{"edge", edge, join(e2eNamed("cw", 1, 3), onlyA, e2eNamed("bw", 1, 5), e2eNamed("zw", 1, 3)), "T1"}, // 8/20 - 8/25 = 0.08
		{"edge", edge, join(e2eNamed("cw", 1, 3), onlyA, e2eNamed("bw", 1, 5), e2eNamed("zw", 1, 4)), ""},   // 8/21 - 8/26 < 0.08
		{"edge", edge, join(onlyA, e2eNamed("cw", 1, 2), e2eNamed("zw", 1, 8)), "T1"},                       // 7/20 = 0.35
		{"edge", edge, join(onlyA, e2eNamed("cw", 1, 2), e2eNamed("zw", 1, 9)), ""},                         // 7/21 < 0.35
		{"tie", tie, join(e2eNamed("pw", 1, 5), e2eNamed("qw", 1, 5)), ""},                                  // 5/11 twice
		{"tie", tie, join(e2eNamed("pw", 1, 6), e2eNamed("qw", 1, 5)), "T1"},                                // 6/11 - 5/12
	} {
		e2ePutSpace(ctx, t, cl, tc.space, tc.catalog)
		if mine, _ := e2eBind(tc.title, tc.catalog); mine != tc.want {
			t.Errorf("this test's bind puts %q on %q, want %q", tc.title, mine, tc.want)
		}
		var got struct {
			WorkItemID *string `json:"work_item_id"`
			Target     string  `json:"target"`
		}
		r := cl.allocDo(ctx, cl.nodes, http.MethodPost, "/v1/spaces/"+tc.space+"/bind", map[string]any{"title": tc.title}, "")
		e2eDecodeReply(t, "bind", r, http.StatusOK, &got)
		if (got.WorkItemID == nil) != (tc.want == "") || got.WorkItemID != nil && *got.WorkItemID != tc.want ||
			got.Target != e2eTaskTarget(tc.space, tc.title, tc.want) {
			t.Errorf("bind of %q in %s: %v, want work item %q", tc.title, tc.space, r, tc.want)
		}
	}
}
