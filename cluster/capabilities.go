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
	"github.com/hashicorp/raft"
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
// view of the configuration and of the replicated metadata (and, for
// itself, its own binary). A voter that has not said what it serves
// counts as serving nothing; a non-voter that
// has not (one that never started) does not count, so that it cannot
// hold the cluster back: it is promoted only once it serves what is
// enabled (promoteLearners).
func (ld *leadership) desiredCapabilities() (fsm.Capabilities, error) {
	servers, err := ld.servers()
	if err != nil {
		return fsm.Capabilities{}, err
	}
	serves := ld.metadata()
	sets := make([]fsm.Capabilities, 0, len(servers))
	for _, s := range servers {
		c := serves[string(s.ID)].Serves
		if string(s.ID) == ld.cfg.ID {
			c = ld.fsm.Served() // what this node serves, registered or not yet
		}
		if s.Suffrage != raft.Voter && len(c.Domains) == 0 {
			continue
		}
		sets = append(sets, c)
	}
	return fsm.Intersect(sets...), nil
}

// settleCapabilities makes the enabled set the desired one; this node must
// be the leader.
func (ld *leadership) settleCapabilities(ctx context.Context) error {
	want, err := ld.desiredCapabilities()
	if err != nil {
		return err
	}
	have, gated := ld.fsm.Enabled()
	if gated && have.Equal(want) {
		return nil
	}
	res, err := ld.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdEnable, Version: 1, Payload: arblog.MustMarshal(want)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	ld.logger.Info("enabled command set changed", "from", describeEnabled(have, gated), "to", want.String())
	if want.Allows(fsm.CmdTick, 2) && !(gated && have.Allows(fsm.CmdTick, 2)) {
		// The first version-2 tick puts the retention settings in the
		// state; without it they would wait a whole tick interval.
		if _, err := ld.tick(ctx); err != nil {
			return fmt.Errorf("first tick under the enabled set: %w", err)
		}
	}
	// A set that newly allows naming the cluster names it now, not a tick
	// interval later.
	return ld.ensureClusterID(ctx)
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
func (cp *commands) gate(ctx context.Context, cmd arblog.Command) error {
	for {
		changed := cp.fsm.Changed()
		if enabled, gated := cp.fsm.Enabled(); gated && enabled.Allows(cmd.Type, cmd.Version) {
			return nil
		}
		lacking, unknown, err := cp.whoLacks(cmd)
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
// serve cmd, and the voters that have not said what they serve.
func (cp *commands) whoLacks(cmd arblog.Command) (lacking, unknown []string, err error) {
	servers, err := cp.servers()
	if err != nil {
		return nil, nil, err
	}
	serves := cp.metadata()
	for _, s := range servers {
		switch c := serves[string(s.ID)].Serves; {
		case len(c.Domains) == 0:
			if s.Suffrage == raft.Voter {
				unknown = append(unknown, string(s.ID))
			}
		case !c.Allows(cmd.Type, cmd.Version):
			lacking = append(lacking, string(s.ID))
		}
	}
	return lacking, unknown, nil
}

// checkJoinerServes refuses a new member whose binary lacks something the
// cluster has enabled: it would halt on the first such entry of the log.
// A member that could not be asked (it has not started) is let in as a
// non-voter and checked when it registers and before it is promoted.
func (mb *membership) checkJoinerServes(req JoinRequest) error {
	enabled, gated := mb.fsm.Enabled()
	if !gated || len(req.Serves.Domains) == 0 {
		return nil
	}
	if missing := req.Serves.Missing(enabled); len(missing) > 0 {
		return errs.Errorf(errs.CodeConflict, "member %s does not serve %s, which this cluster has enabled: run a binary that does",
			req.ID, strings.Join(missing, ", "))
	}
	return nil
}

// fetchServes asks the member req names what its binary serves (its
// capabilities route, read locally). A member that cannot be asked keeps
// what it said last, or, new, serves nothing known yet.
func (mb *membership) fetchServes(ctx context.Context, req JoinRequest) fsm.Capabilities {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var v fsm.CapabilitiesView
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, mb.url(req.APIAddr, "/v1/cluster/capabilities?consistency=stale"), nil)
	if err == nil {
		if err = doJSON(mb.peers, get, &v); err == nil {
			return v.Served
		}
	}
	if m, ok := mb.metadata()[req.ID]; ok {
		return m.Serves
	}
	mb.logger.Info("cannot ask a joining member what it serves; it counts once it registers", "id", req.ID, "api_addr", req.APIAddr, "error", err)
	return fsm.Capabilities{}
}

// handleCapabilities answers the enabled set (as the leader holds it,
// unless consistency=stale) and what this node's binary serves.
func (hs *httpAPI) handleCapabilities(w http.ResponseWriter, r *http.Request) {
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
	if err := fsm.Ask(r.Context(), hs.node, fsm.QueryCapabilities, c == fsm.Stale, struct{}{}, &v); err != nil {
		domain.WriteError(w, err)
		return
	}
	v.Served = hs.fsm.Served() // this node's, whoever answered the read
	domain.WriteJSON(w, http.StatusOK, v)
}

// errNotEnabled is the leader's refusal of a command outside the enabled
// set (see gate: the node a client called has already waited or refused).
func errNotEnabled(cmd arblog.Command) error {
	return errs.Errorf(errs.CodeUnavailable, "command type %d version %d is not enabled in this cluster", cmd.Type, cmd.Version)
}
