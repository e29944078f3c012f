package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// Rolling upgrades. Each member advertises what its binary serves in its
// replicated metadata (fsm.Member.Serves). The leader keeps the enabled
// set (fsm.Capabilities) equal to what every member of the raft
// configuration serves: it raises the set when the last member that
// lacked a command upgrades, and lowers it when a member that lacks one
// comes back (a downgrade). A member without metadata yet serves nothing,
// so a new cluster enables its domains once every member has registered.
//
// A command outside the enabled set is refused before it is proposed
// (503 unavailable, naming the members that lack it), and by Apply on
// every replica alike should one slip past a stale check. A command every
// member serves but the leader has not enabled yet (a cluster just
// started or just upgraded) waits for the leader, within the call's
// deadline.

// desiredCapabilities is what the cluster should enable: the intersection
// of what every member of the raft configuration serves, by this node's
// view of the configuration and of the replicated metadata. A member that
// has not said what it serves counts as serving nothing.
func (n *Node) desiredCapabilities() (fsm.Capabilities, error) {
	servers, err := n.servers()
	if err != nil {
		return fsm.Capabilities{}, err
	}
	serves := map[string]fsm.Capabilities{}
	for _, m := range n.fsm.Members() {
		serves[m.ID] = m.Serves
	}
	sets := make([]fsm.Capabilities, 0, len(servers))
	for _, s := range servers {
		sets = append(sets, serves[string(s.ID)])
	}
	return fsm.Intersect(sets...), nil
}

// settleCapabilities makes the enabled set the desired one; this node must
// be the leader.
func (n *Node) settleCapabilities(ctx context.Context) error {
	want, err := n.desiredCapabilities()
	if err != nil {
		return err
	}
	have, gated := n.fsm.Enabled()
	if gated && have.Equal(want) {
		return nil
	}
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdEnable, Version: 1, Payload: arblog.MustMarshal(want)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	n.logger.Info("enabled command set changed", "from", describeEnabled(have, gated), "to", want.String())
	if want.Allows(fsm.CmdTick, 2) && !(gated && have.Allows(fsm.CmdTick, 2)) {
		// The first version-2 tick puts the retention settings in the
		// state; without it they would wait a whole tick interval.
		if _, err := n.tick(ctx); err != nil {
			return fmt.Errorf("first tick under the enabled set: %w", err)
		}
	}
	return nil
}

func describeEnabled(c fsm.Capabilities, gated bool) string {
	if !gated {
		return "ungated"
	}
	return c.String()
}

// gate lets cmd be proposed only when the cluster enables it. A command
// that every registered member serves waits, until ctx ends, for the
// leader to enable it (and for the members that have not said what they
// serve to say so); one a registered member lacks is refused at once.
func (n *Node) gate(ctx context.Context, cmd arblog.Command) error {
	for {
		changed := n.fsm.Changed()
		if enabled, gated := n.fsm.Enabled(); gated && enabled.Allows(cmd.Type, cmd.Version) {
			return nil
		}
		lacking, unknown, err := n.whoLacks(cmd)
		if err != nil {
			return err
		}
		if len(lacking) > 0 {
			e := errs.Errorf(errs.CodeUnavailable, "command type %d version %d is not enabled in this cluster: not served by member(s) %s (upgrade or replace them)",
				cmd.Type, cmd.Version, strings.Join(lacking, ", "))
			e.Detail = map[string]any{"not_served_by": lacking}
			return e
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if len(unknown) > 0 {
				return errs.Errorf(errs.CodeUnavailable, "command type %d version %d is not enabled yet: waiting for member(s) %s to say what they serve",
					cmd.Type, cmd.Version, strings.Join(unknown, ", "))
			}
			return errs.Errorf(errs.CodeUnavailable, "command type %d version %d is served by every member but not yet enabled by the leader", cmd.Type, cmd.Version)
		}
	}
}

// whoLacks lists the members of the configuration whose binary does not
// serve cmd, and those that have not said what they serve.
func (n *Node) whoLacks(cmd arblog.Command) (lacking, unknown []string, err error) {
	servers, err := n.servers()
	if err != nil {
		return nil, nil, err
	}
	serves := map[string]fsm.Capabilities{}
	for _, m := range n.fsm.Members() {
		serves[m.ID] = m.Serves
	}
	for _, s := range servers {
		switch c := serves[string(s.ID)]; {
		case len(c.Domains) == 0:
			unknown = append(unknown, string(s.ID))
		case !c.Allows(cmd.Type, cmd.Version):
			lacking = append(lacking, string(s.ID))
		}
	}
	return lacking, unknown, nil
}

// checkJoinerServes refuses a new member whose binary lacks something the
// cluster has enabled: it would halt on the first such entry of the log.
func (n *Node) checkJoinerServes(req JoinRequest) error {
	enabled, gated := n.fsm.Enabled()
	if !gated {
		return nil
	}
	if missing := req.Serves.Missing(enabled); len(missing) > 0 {
		return errs.Errorf(errs.CodeConflict, "member %s does not serve %s, which this cluster has enabled: run a binary that does",
			req.ID, strings.Join(missing, ", "))
	}
	return nil
}

// fetchServes asks the member req names what its binary serves (its
// capabilities route, read locally); a member already in the metadata
// that cannot be asked keeps what it said last.
func (n *Node) fetchServes(ctx context.Context, req JoinRequest) (fsm.Capabilities, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var v fsm.CapabilitiesView
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url(req.APIAddr, "/v1/cluster/capabilities?consistency=stale"), nil)
	if err == nil {
		if err = doJSON(n.peers, get, &v); err == nil {
			return v.Served, nil
		}
	}
	for _, m := range n.fsm.Members() {
		if m.ID == req.ID {
			return m.Serves, nil
		}
	}
	return fsm.Capabilities{}, errs.Errorf(errs.CodeUnavailable, "cannot learn what member %s serves from %s: %v", req.ID, req.APIAddr, err)
}

// handleCapabilities answers the enabled set (as the leader holds it,
// unless consistency=stale) and what this node's binary serves.
func (n *Node) handleCapabilities(w http.ResponseWriter, r *http.Request) {
	p, err := domain.ParseParams(r, "consistency")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	c, err := p.Consistency()
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	var v fsm.CapabilitiesView
	if err := fsm.Ask(r.Context(), n, fsm.QueryCapabilities, c == fsm.Stale, struct{}{}, &v); err != nil {
		domain.WriteError(w, err)
		return
	}
	v.Served = n.fsm.Served() // this node's, whoever answered the read
	domain.WriteJSON(w, http.StatusOK, v)
}

// errNotEnabled is the leader's refusal of a command outside the enabled
// set (see gate: the node a client called has already waited or refused).
func errNotEnabled(cmd arblog.Command) error {
	return errs.Errorf(errs.CodeUnavailable, "command type %d version %d is not enabled in this cluster", cmd.Type, cmd.Version)
}
