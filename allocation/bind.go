package allocation

// Score is one catalog row's Jaccard figure for a title, as the exact
// fraction intersection/union of token sets.
type Score struct {
	WorkItemID   string `json:"work_item_id" msgpack:"work_item_id"`
	Intersection int    `json:"intersection" msgpack:"intersection"`
	Union        int    `json:"union" msgpack:"union"`
}

// The bind thresholds, as exact fractions: tau = 35/100, delta = 8/100.
const (
	tauNum, tauDen     = 35, 100
	deltaNum, deltaDen = 8, 100
)

// scoreOf is |title ∩ bag| and |title ∪ bag| of two sorted sets.
func scoreOf(title, bag []string) (inter, union int) {
	i, j := 0, 0
	for i < len(title) && j < len(bag) {
		switch {
		case title[i] == bag[j]:
			inter++
			i++
			j++
		case title[i] < bag[j]:
			i++
		default:
			j++
		}
	}
	return inter, len(title) + len(bag) - inter
}

// less reports whether a/b < c/d for non-negative a, c and positive b, d.
func less(a, b, c, d int) bool { return int64(a)*int64(d) < int64(c)*int64(b) }

// bindTokens is the charter-index bind of spec section 2.1 in exact
// integer arithmetic: the scores of every catalog row (bags[i] is row i's
// sorted bag, never empty), and the index of the row bound, or -1. The
// unique argmax binds when 100·a₁ ≥ 35·u₁ and 100·(a₁·u₂ − a₂·u₁) ≥
// 8·u₁·u₂, (a₂, u₂) the best other row (0/1 with a single row); equal top
// scores never bind.
func bindTokens(title []string, ids []string, bags [][]string) (int, []Score) {
	scores := make([]Score, len(bags))
	best := -1
	for i, bag := range bags {
		a, u := scoreOf(title, bag)
		scores[i] = Score{WorkItemID: ids[i], Intersection: a, Union: u}
		if best < 0 || less(scores[best].Intersection, scores[best].Union, a, u) {
			best = i
		}
	}
	if best < 0 {
		return -1, scores
	}
	a2, u2 := 0, 1
	for i, s := range scores {
		if i != best && !less(s.Intersection, s.Union, a2, u2) {
			a2, u2 = s.Intersection, s.Union
		}
	}
	a1, u1 := int64(scores[best].Intersection), int64(scores[best].Union)
	if tauDen*a1 < tauNum*u1 {
		return -1, scores
	}
	if deltaDen*(a1*int64(u2)-int64(a2)*u1) < deltaNum*u1*int64(u2) {
		return -1, scores
	}
	return best, scores
}
