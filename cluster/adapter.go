package cluster

import (
	"context"
	"log/slog"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

var _ domain.Host = (*Node)(nil)

// Adapter is this node as the Proposer and Reader of an in-server
// adapter: every command and query it passes on is marked with the
// adapter's name (log.Command.Adapter), which a module may accept in place
// of a role (the node primitives accept the concept authority's). Only
// code in this process can build one; the HTTP layer clears the mark on
// everything a client sends.
func (n *Node) Adapter(name string) domain.Backend { return adapter{n: n, name: name} }

// Logger is the node's logger.
func (n *Node) Logger() *slog.Logger { return n.logger }

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
