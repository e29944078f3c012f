package cluster

import (
	"context"

	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// adapter is this node as the Proposer and Reader of an in-server adapter:
// every command and query it passes on is marked with the adapter's name
// (log.Command.Adapter), which the FSM accepts in place of the admin role
// for the raw node primitives. Only code in this process can build one;
// the HTTP layer clears the mark on everything a client sends.
type adapter struct {
	n    *Node
	name string
}

func (a adapter) Propose(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	cmd.Adapter = a.name
	return a.n.Propose(ctx, cmd)
}

func (a adapter) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	q.Adapter = a.name
	return a.n.Query(ctx, q)
}
