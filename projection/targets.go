package projection

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// registerCmd is the payload of CmdRegisterTarget: the attested tuple, the
// agent it is for and the channel bindings sorted by channel.
type registerCmd struct {
	AgentID  string           `msgpack:"agent_id"`
	Attested Attested         `msgpack:"attested"`
	Channels []ChannelBinding `msgpack:"channels"`
}

// applyRegisterTarget admits a target. Registering the same tuple with the
// same bindings again changes nothing (created false); with other
// bindings it is a conflict: a channel's producer is fixed for the
// target's life.
func applyRegisterTarget(tx *fsm.Tx, _ *log.Command, c *registerCmd) (any, error) {
	id, err := DeriveTargetID(c.AgentID, c.Attested)
	if err != nil {
		return nil, err
	}
	old, err := getTarget(tx, id)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if !slices.Equal(old.Channels, c.Channels) {
			return nil, errs.Errorf(errs.CodeConflict, "target %s is registered with other channel bindings; they cannot change", id)
		}
		return &TargetResult{TargetID: id}, nil
	}
	cfg, err := getConfig(tx)
	if err != nil {
		return nil, err
	}
	if cfg.Targets >= MaxTargets {
		return nil, errs.Errorf(errs.CodeExhausted, "the cluster holds %d projection targets, the most it admits", MaxTargets)
	}
	if n, err := countAgentTargets(tx, c.AgentID); err != nil {
		return nil, err
	} else if n >= MaxTargetsPerAgent {
		return nil, errs.Errorf(errs.CodeExhausted, "agent %q has %d projection targets, the most one agent may have", c.AgentID, MaxTargetsPerAgent)
	}
	t := &targetRow{TargetID: id, AgentID: c.AgentID, Attested: c.Attested, Channels: slices.Clone(c.Channels), CreatedAtMs: tx.Now}
	if err := tx.Insert(tableTargets, t); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store target: %v", err)
	}
	n := *cfg
	n.Targets++
	if err := tx.Insert(tableConfig, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "count targets: %v", err)
	}
	tx.Emit("projection_target", id, "")
	return &TargetResult{TargetID: id, Created: true}, nil
}

func getTarget(s fsm.Store, id string) (*targetRow, error) {
	raw, err := s.First(tableTargets, "id", id)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read target: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*targetRow), nil
}

// countAgentTargets counts an agent's targets, reading at most
// MaxTargetsPerAgent rows.
func countAgentTargets(s fsm.Store, agent string) (int, error) {
	it, err := s.Get(tableTargets, "agent_prefix", agent)
	if err != nil {
		return 0, errs.Errorf(errs.CodeInternal, "scan targets: %v", err)
	}
	n := 0
	for raw := it.Next(); raw != nil && n < MaxTargetsPerAgent; raw = it.Next() {
		n++
	}
	return n, nil
}

// producerOf is the principal bound to channel on t, "" if t does not
// admit the channel.
func (t *targetRow) producerOf(channel string) string {
	for _, b := range t.Channels {
		if b.Channel == channel {
			return b.Producer
		}
	}
	return ""
}

// mayHold reports whether p may acquire, publish with and release the
// target's lease: its agent (role member or above), an admin, or the
// trusted host.
func (t *targetRow) mayHold(p identity.Principal) bool {
	return p.Trusted() || p.HasRole(identity.RoleAdmin) || p.ID == t.AgentID && p.HasRole(identity.RoleMember)
}

// mayRead reports whether p may see the target: those who may hold it
// and its producers. Anyone else is told it does not exist.
func (t *targetRow) mayRead(p identity.Principal) bool {
	if p.Trusted() || p.HasRole(identity.RoleAdmin) || p.ID == t.AgentID {
		return true
	}
	for _, b := range t.Channels {
		if b.Producer == p.ID {
			return true
		}
	}
	return false
}

// missing is the one answer for a target that does not exist or that the
// caller may not see.
func missing(id string) error {
	return errs.Errorf(errs.CodeNotFound, "no projection target %s", id)
}
