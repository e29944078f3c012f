package authority

import (
	"context"

	"github.com/arbiterhq/arbiter/nodes"
)

// Fences. Every write of a claim (reserve, reclaim, transition) gives it
// a new fence, higher than the one before, and a holder proves what it
// holds with the fence it last saw.
//
// Where the cluster enables version 2 of the node primitives, a fence is
// the log index of the entry that wrote the claim (nodes.IndexFields).
// The log index never goes backwards, also when a backup is restored
// into the cluster, so a fence issued after a restore is above every
// fence issued before it. Until then (an upgrade part-way, or state no
// set has gated) a fence counts up by one from the claim's last, as
// older releases did; a counted fence rolls back with a restored backup.
// Mixing the two never lowers a fence: a counted fence is at most the
// index of the entry that wrote it, since every write of a claim is a
// later entry than the one before.
//
// Every write also records the fence it replaced (prev_fence), which is
// how a holder's retry of a transition already committed is recognized
// when the next fence cannot be computed from the one it holds.

// fieldPrevFence holds the fence a write replaced.
const fieldPrevFence = "prev_fence"

// fenceFields makes a write's fence the log index of its entry where the
// cluster enables it: the fence leaves the written values, and the FSM
// sets it. Elsewhere the values keep their counted fence and no index
// field is set.
func (s *Service) fenceFields(ctx context.Context, values map[string]any) (nodes.IndexFields, error) {
	on, err := s.nodes.IndexFieldsEnabled(ctx)
	if err != nil {
		return nodes.IndexFields{}, fromCluster(err)
	}
	return indexFence(on, values), nil
}

// fenceFields is Service.fenceFields where the mode says whether index
// fences are on.
func (m mode) fenceFields(values map[string]any) nodes.IndexFields {
	return indexFence(m.IndexFences, values)
}

func indexFence(on bool, values map[string]any) nodes.IndexFields {
	if !on {
		return nodes.IndexFields{}
	}
	delete(values, fieldFence)
	return nodes.IndexFields{SetIndex: []string{fieldFence}}
}
