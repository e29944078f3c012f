package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
)

// maxFeedPages bounds a read of a whole change feed: far more pages than a
// run writes events (a run's feed stays under its 100,000-event retention).
const maxFeedPages = 2000

// feedEvents is the replica's whole change feed, in log order, restricted
// to the events keep selects. It fails if the feed was pruned: the checks
// that read it (a replay, the order of fences) must see every event from
// the first.
func feedEvents(ctx context.Context, node *cluster.Node, keep func(fsm.Event) bool) ([]fsm.Event, error) {
	var out []fsm.Event
	var after uint64
	for pages := 0; pages < maxFeedPages; pages++ {
		var page fsm.ChangesPage
		if err := fsm.Ask(ctx, node, fsm.QueryChanges, true, fsm.ChangesRequest{After: after, Limit: fsm.MaxChangesPage}, &page); err != nil {
			return nil, fmt.Errorf("change feed after %d: %w", after, err)
		}
		if pages == 0 && (len(page.Events) == 0 || page.Events[0].Seq != 1) {
			return nil, errors.New("the change feed does not start at sequence 1: it was pruned, and the run cannot be checked")
		}
		for _, e := range page.Events {
			if keep(e) {
				out = append(out, e)
			}
		}
		if len(page.Events) == 0 {
			return out, nil
		}
		after = page.Next
	}
	return nil, fmt.Errorf("more than %d pages of changes", maxFeedPages)
}

// fenceOrder names fences by their order of issue per key (a cell, a
// concept id): 1, 2, 3, ... That is what the porcupine models know fences
// by, while the fences themselves are log indexes, opaque until a run is
// over. Fences must be added in the order they were issued.
type fenceOrder struct {
	order   map[string]map[uint64]uint64
	unknown []string // fences asked for that no write issued
}

func newFenceOrder() *fenceOrder { return &fenceOrder{order: map[string]map[uint64]uint64{}} }

// add records fence as the next one issued on key.
func (o *fenceOrder) add(key string, fence uint64) {
	if o.order[key] == nil {
		o.order[key] = map[uint64]uint64{}
	}
	o.order[key][fence] = uint64(len(o.order[key]) + 1)
}

// ordinal is fence's order of issue on key; 0 stays 0 (no fence). A fence
// never added is remembered for err and answers 0.
func (o *fenceOrder) ordinal(key string, fence uint64) uint64 {
	if fence == 0 {
		return 0
	}
	n, ok := o.order[key][fence]
	if !ok {
		o.unknown = append(o.unknown, fmt.Sprintf("%s#%d", key, fence))
	}
	return n
}

// err names every fence ordinal was asked for and no write issued.
func (o *fenceOrder) err() error {
	if len(o.unknown) > 0 {
		return fmt.Errorf("the history names fences no write issued: %v", o.unknown)
	}
	return nil
}
