package chaos

import (
	"fmt"
	"net/http"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/cluster"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
)

// allocMaxProposals bounds a chaos window: enough for two proposals on
// one key and a third on another, few enough that porcupine's partitions
// stay small.
const allocMaxProposals = 4

// window sends one allocation window of 2 to allocMaxProposals create
// proposals on keys of generation g (often two on one key), some with a
// received_seq. The history gets one operation per key the window
// touches, with the answers on that key in processing order: the window
// is one command, so it takes effect on all its keys at one point.
func (c *allocClient) window(svc *allocation.Service, node *cluster.Node, g int, space string, title func() string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	n := 2 + c.rng.IntN(allocMaxProposals-1)
	proposals := make([]allocation.Proposal, n)
	var keys []string // the titles, in order of first appearance
	count := map[string]int{}
	for i := range proposals {
		p := allocation.Proposal{ProposalID: fmt.Sprintf("c%d-%d-%d", c.id, c.steps, i), Title: title(), DeliveryMode: allocMode}
		if c.rng.IntN(2) == 0 {
			seq := uint64(c.rng.IntN(3))
			p.ReceivedSeq = &seq
		}
		if count[p.Title] == 0 {
			keys = append(keys, p.Title)
		}
		count[p.Title]++
		proposals[i] = p
	}
	floor := node.FSM().Now()
	calls := make(map[string]*Call, len(keys))
	for _, k := range keys {
		calls[k] = rec.Call(c.id, lin.AllocInput{Kind: lin.AllocWindow, Key: modelKey(space, k), Count: count[k], Expiring: space == allocShortSpace})
	}
	res, err := svc.Window(ctx, space, allocation.WindowRequest{Proposals: proposals})
	if err != nil {
		for _, k := range keys {
			calls[k].Failed(err, true)
		}
		return
	}
	titles := map[string]string{}
	for _, p := range proposals {
		titles[p.ProposalID] = p.Title
	}
	for _, e := range res.Results {
		_, sent := titles[e.ProposalID]
		created := e.Status == http.StatusCreated && e.Task != nil
		lost := e.Status == http.StatusConflict && e.Conflict != nil && e.Conflict.Winner != nil
		if !sent || !created && !lost || len(res.Results) != n {
			for _, k := range keys {
				calls[k].Unexpected(fmt.Sprintf("window of %d answered %d results, %s with %d (%v)", n, len(res.Results), e.ProposalID, e.Status, e.Error))
			}
			return
		}
	}
	outs := map[string]*lin.AllocWindowOutput{}
	for _, k := range keys {
		outs[k] = &lin.AllocWindowOutput{}
	}
	made := map[string]string{} // proposal id -> the task it created
	for _, e := range res.Results {
		k := titles[e.ProposalID]
		if e.Status == http.StatusCreated {
			c.won(*e.Task, space, k, g, rec)
			made[e.ProposalID] = taskHolder(e.Task.ID)
			outs[k].Results = append(outs[k].Results, lin.AllocOutput{Won: true, Holder: taskHolder(e.Task.ID)})
			continue
		}
		// A loser to an earlier proposal of this window names that
		// proposal's reservation, which the window turned into its task.
		if h, ok := made[e.Conflict.ReservedProposalID]; ok && e.Conflict.Winner.Type == allocation.WinnerReservedIntent {
			outs[k].Results = append(outs[k].Results, lin.AllocOutput{Holder: h})
			continue
		}
		c.w.checkNotExpired(space, e.Conflict, floor)
		outs[k].Results = append(outs[k].Results, lin.AllocOutput{Holder: winnerName(e.Conflict)})
	}
	for _, k := range keys {
		won := false
		for _, r := range outs[k].Results {
			won = won || r.Won
		}
		outcome := "window/lost"
		if won {
			outcome = "window/won"
		}
		calls[k].Decided(*outs[k], outcome, won)
	}
}
