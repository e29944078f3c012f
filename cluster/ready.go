package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// Readiness. A node is ready when it can serve what a caller asks of it:
// it has not halted, knows a leader, has applied what it knows to be
// committed, and has caught up since it started (see startMark). A caller
// may also name the commands it will send (?require=, a client's Ready):
// "a missing required method is an incompatible deployment and a
// readiness failure that callers must reject before work submission"
// (capacity-leases-and-workitem-admission.txt), so a cluster that does not
// enable one of them is not ready for that caller.

// caughtUp reports whether this node has applied what it must have once
// since it started (startMark), and what that is.
func (h *raftHost) caughtUp() (ok bool, applied, mark uint64, known bool) {
	applied = h.fsm.AppliedIndex()
	if h.guard == nil {
		return false, applied, 0, false
	}
	mark, known = h.guard.StartIndex()
	return known && applied >= mark, applied, mark, known
}

// maxRequired bounds the requirements of one readiness check, and
// maxRequireBytes the text that lists them.
const (
	maxRequired     = 64
	maxRequireBytes = 4096
)

// requirement is one name a readiness check requires: a domain
// ("capacity"), or one of its commands ("capacity.acquire" or
// "capacity.capacity_acquire"), optionally at a least version
// ("capacity.acquire@2").
type requirement struct {
	text    string // as the caller wrote it
	domain  string
	command string // "" for the whole domain
	version uint16 // 0: any version
}

// parseRequirements reads a comma-separated list of requirements (empty
// items are skipped).
func parseRequirements(list string) ([]requirement, error) {
	if len(list) > maxRequireBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "require: %d bytes, more than %d", len(list), maxRequireBytes)
	}
	var out []requirement
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if len(out) == maxRequired {
			return nil, errs.Errorf(errs.CodeInvalid, "require: more than %d names", maxRequired)
		}
		r, err := parseRequirement(item)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRequirement(s string) (requirement, error) {
	r := requirement{text: s}
	bad := func(why string) (requirement, error) {
		return requirement{}, errs.Errorf(errs.CodeInvalid, "require: %q: %s (want domain, domain.command or domain.command@version, as /v1/cluster/capabilities names them)", s, why)
	}
	name, version, hasVersion := strings.Cut(s, "@")
	if hasVersion {
		v, err := strconv.ParseUint(version, 10, 16)
		if err != nil || v == 0 {
			return bad("the version must be an integer from 1 to 65535")
		}
		r.version = uint16(v)
	}
	domainName, command, hasCommand := strings.Cut(name, ".")
	if !lowerIdent(domainName) || hasCommand && !lowerIdent(command) {
		return bad("names are lowercase letters, digits and '_'")
	}
	if hasVersion && !hasCommand {
		return bad("a version needs a command")
	}
	r.domain, r.command = domainName, command
	return r, nil
}

func lowerIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// unmet says why enabled does not satisfy r ("" when it does). A
// command matches by its full name or by its name without its first
// word (capacity_acquire is "acquire", node_create is "create").
func (r requirement) unmet(enabled fsm.Capabilities) string {
	for _, d := range enabled.Domains {
		if d.Name != r.domain {
			continue
		}
		if r.command == "" {
			return ""
		}
		best := uint16(0)
		for _, c := range d.Commands {
			_, short, _ := strings.Cut(c.Name, "_")
			if c.Name == r.command || short == r.command {
				best = max(best, c.Version)
			}
		}
		switch {
		case best == 0:
			return r.text + " (no such command enabled)"
		case best < r.version:
			return fmt.Sprintf("%s (enabled at version %d)", r.text, best)
		}
		return ""
	}
	return r.text + " (domain not enabled)"
}

// checkRequired fails with unavailable, naming every requirement the
// enabled set does not meet (also in Detail["missing"], as written).
func checkRequired(enabled fsm.Capabilities, reqs []requirement) error {
	var missing, why []string
	for _, r := range reqs {
		if w := r.unmet(enabled); w != "" {
			missing, why = append(missing, r.text), append(why, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	e := errs.Errorf(errs.CodeUnavailable, "incompatible deployment: the cluster does not enable %s", strings.Join(why, ", "))
	e.Detail = map[string]any{"missing": missing}
	return e
}

// Ready is nil when this node is ready to serve: it has not halted, is
// running, knows a leader (as the leader: has committed an entry in its
// term), has applied everything it knows to be committed and what the
// leader had committed when this node started (startMark), and the cluster enables every command require names (see
// requirement; an ungated state enables what this binary serves, as
// /v1/cluster/capabilities says). Otherwise it is unavailable saying why
// (invalid for a malformed requirement). /readyz answers it.
func (n *Node) Ready(require ...string) error {
	reqs, err := parseRequirements(strings.Join(require, ","))
	if err != nil {
		return err
	}
	if n.raft == nil {
		return errs.New(errs.CodeUnavailable, "not started")
	}
	_, leader := n.raft.LeaderWithID()
	switch {
	case n.fsm.Halted() != nil:
		return errs.Errorf(errs.CodeUnavailable, "halted: %s", n.fsm.Halted())
	case n.raft.State() == raft.Shutdown:
		return errs.New(errs.CodeUnavailable, "shut down")
	case leader == "":
		return errs.New(errs.CodeUnavailable, "no known leader")
	case n.isLeader() && n.host.readyTerm.Load() != n.raft.CurrentTerm():
		return errs.New(errs.CodeUnavailable, "leader has not yet committed an entry in its term")
	case n.raft.AppliedIndex() < n.raft.CommitIndex():
		return errs.Errorf(errs.CodeUnavailable, "applied %d of %d committed entries", n.raft.AppliedIndex(), n.raft.CommitIndex())
	}
	if ok, applied, mark, known := n.host.caughtUp(); !ok {
		if !known {
			return errs.New(errs.CodeUnavailable, "not caught up: has not heard from the leader how far the log is committed since it started")
		}
		return errs.Errorf(errs.CodeUnavailable, "not caught up: applied %d of the %d entries the leader had committed when this node started", applied, mark)
	}
	enabled, gated := n.fsm.Enabled()
	if !gated {
		enabled = n.fsm.Served()
	}
	return checkRequired(enabled, reqs)
}

// Headers of a stale read (GET with consistency=stale), set before the
// read: how stale the answer may be.
const (
	// HeaderAppliedIndex is the index this node had applied when the read
	// began: the answer reflects at least every entry up to it.
	HeaderAppliedIndex = "Arbiter-Applied-Index"
	// HeaderLeaderContact is the milliseconds since this node last heard
	// from the leader: 0 on the leader, -1 if it has not since it
	// started.
	HeaderLeaderContact = "Arbiter-Leader-Contact-Ms"
	// HeaderCaughtUp is "true" once the node has applied what the leader
	// had committed when the node started (see startMark), "false"
	// before: an answer from a node that is not caught up may miss what
	// the cluster had long committed (a 404 for what exists).
	HeaderCaughtUp = "Arbiter-Caught-Up"
)

// staleness sets the headers of a stale read.
func (hs *httpAPI) staleness(h http.Header) {
	ok, applied, _, _ := hs.host.caughtUp()
	contact := int64(-1)
	switch {
	case hs.isLeader():
		contact = 0
	case !hs.raft.LastContact().IsZero():
		contact = time.Since(hs.raft.LastContact()).Milliseconds()
	}
	h.Set(HeaderAppliedIndex, strconv.FormatUint(applied, 10))
	h.Set(HeaderLeaderContact, strconv.FormatInt(contact, 10))
	h.Set(HeaderCaughtUp, strconv.FormatBool(ok))
}

// WaitReady blocks until this node can take its full part in the cluster
// (Ready, with require, and a voter in its own latest configuration: a
// node that joined counts toward quorum only once the leader has promoted
// it), or until ctx ends or the node stops; it then returns why the node
// is not ready yet. Start returns while a joiner is still a non-voter, so
// a program that starts several nodes and then stops one should wait for
// every node first: closing a leader before the others vote can leave a
// cluster without a leader for good.
func (n *Node) WaitReady(ctx context.Context, require ...string) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := n.Ready(require...)
		if err == nil {
			err = n.host.voter()
		}
		if err == nil || errs.CodeOf(err) == errs.CodeInvalid {
			return err
		}
		if stopped := n.stoppedErr(); stopped != nil {
			return stopped
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return errs.Errorf(errs.CodeUnavailable, "node %s not ready before the deadline: %v", n.cfg.ID, err)
		}
	}
}

// voter is nil when this node is a voter in its latest configuration.
func (h *raftHost) voter() error {
	f := h.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "configuration: %v", err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(h.cfg.ID) {
			if s.Suffrage == raft.Voter {
				return nil
			}
			return errs.New(errs.CodeUnavailable, "not a voter yet: the leader promotes a member once it has caught up")
		}
	}
	return errs.New(errs.CodeUnavailable, "not a member of its cluster's configuration yet")
}
