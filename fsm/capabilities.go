package fsm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Capabilities name commands by domain and version. A binary serves the
// commands of the modules it was built with; each member advertises what
// its binary serves in its replicated metadata; the replicated state holds
// what the cluster has enabled: the commands every member serves, each at
// the lowest version any member serves. The leader raises or lowers the
// enabled set (CmdEnable) as members come, go and upgrade.
//
// Apply refuses a command outside the enabled set on every replica alike
// (unavailable), so a command some replica cannot apply never changes any
// replica. A replica that meets an enabled command it does not understand
// (its binary lacks the domain, or is older) halts instead of answering
// differently from its peers: see Halt.
//
// Until the first CmdEnable is applied the state is ungated and every
// command a replica understands applies, as before capabilities existed;
// that is what lets a log written by an older release replay unchanged.
//
// The enabled version of a command is also its semantic version: a
// handler whose behaviour changes between versions asks
// Tx.EnabledVersion and keeps the old behaviour below the new version, so
// that replicas agree while some still run the old binary and a log
// replays as it was first applied. Ungated state counts as version 1.
// Every binary serves the core module (ticks, members, CmdEnable), which
// is versioned the same way.
type Capabilities struct {
	// Domains, sorted by name, each with at least one command.
	Domains []DomainCaps `msgpack:"domains" json:"domains"`
}

// DomainCaps is one domain's commands, sorted by type.
type DomainCaps struct {
	Name     string       `msgpack:"name" json:"name"`
	Commands []CommandCap `msgpack:"commands" json:"commands"`
}

// CommandCap is one command type at one version: the newest a binary
// applies, or the newest the cluster lets anyone propose.
type CommandCap struct {
	Type    log.Type `msgpack:"type" json:"type"`
	Name    string   `msgpack:"name" json:"name"`
	Version uint16   `msgpack:"version" json:"version"`
}

// Bounds on a capability set.
const (
	MaxCapabilityDomains  = 64
	MaxCapabilityCommands = 256 // per domain
)

// baseline reports whether command type t at version v applies whatever
// the enabled set says: version 1 of the core commands a cluster needs
// before any set is enabled (ticks, member metadata, CmdEnable itself).
// Newer versions of them, and any core command added later, are gated
// like a domain's.
func baseline(t log.Type, v uint16) bool {
	return v == 1 && (t == CmdTick || t == CmdMemberUpsert || t == CmdMemberRemove || t == CmdEnable)
}

// Gated reports whether command type t at version v needs the enabled
// set's leave: everything but the baseline core commands.
func Gated(t log.Type, v uint16) bool { return !baseline(t, v) }

// Capabilities is what the module serves: its commands at their newest
// versions, under its name. A client of a domain requires this of a
// cluster (Require).
func (m Module) Capabilities() Capabilities {
	d := DomainCaps{Name: m.Name}
	for _, cmd := range m.Commands {
		d.Commands = append(d.Commands, CommandCap{Type: cmd.Type, Name: cmd.Name, Version: cmd.MaxVersion})
	}
	if len(d.Commands) == 0 {
		return Capabilities{}
	}
	slices.SortFunc(d.Commands, func(a, b CommandCap) int { return int(a.Type) - int(b.Type) })
	return Capabilities{Domains: []DomainCaps{d}}
}

// ServedBy is what a binary built with modules serves: theirs and the
// core module's commands.
func ServedBy(modules ...Module) Capabilities {
	var c Capabilities
	for _, m := range append([]Module{coreModule()}, modules...) {
		c.Domains = append(c.Domains, m.Capabilities().Domains...)
	}
	slices.SortFunc(c.Domains, func(a, b DomainCaps) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// Intersect is what every one of sets serves: the domains all of them
// name, with the commands all of them name (under the same name), each at
// the lowest version. With no sets it is empty.
func Intersect(sets ...Capabilities) Capabilities {
	if len(sets) == 0 {
		return Capabilities{}
	}
	var out Capabilities
	for _, d := range sets[0].Domains {
		keep := DomainCaps{Name: d.Name}
		for _, cmd := range d.Commands {
			lowest, everywhere := cmd, true
			for _, other := range sets[1:] {
				o, ok := other.lookup(cmd.Type)
				if !ok || o.domain != d.Name || o.cmd.Name != cmd.Name {
					everywhere = false
					break
				}
				lowest.Version = min(lowest.Version, o.cmd.Version)
			}
			if everywhere {
				keep.Commands = append(keep.Commands, lowest)
			}
		}
		if len(keep.Commands) > 0 {
			out.Domains = append(out.Domains, keep)
		}
	}
	return out
}

type capLookup struct {
	domain string
	cmd    CommandCap
}

// lookup finds command type t.
func (c Capabilities) lookup(t log.Type) (capLookup, bool) {
	for _, d := range c.Domains {
		i, ok := slices.BinarySearchFunc(d.Commands, t, func(c CommandCap, t log.Type) int { return int(c.Type) - int(t) })
		if ok {
			return capLookup{domain: d.Name, cmd: d.Commands[i]}, true
		}
	}
	return capLookup{}, false
}

// Allows reports whether command type t at version v is in the set.
func (c Capabilities) Allows(t log.Type, v uint16) bool {
	l, ok := c.lookup(t)
	return ok && v >= 1 && v <= l.cmd.Version
}

// HasDomain reports whether the set names the domain.
func (c Capabilities) HasDomain(name string) bool {
	_, ok := slices.BinarySearchFunc(c.Domains, name, func(d DomainCaps, n string) int { return strings.Compare(d.Name, n) })
	return ok
}

// Equal reports whether c and o are the same set.
func (c Capabilities) Equal(o Capabilities) bool {
	return slices.EqualFunc(c.Domains, o.Domains, func(a, b DomainCaps) bool {
		return a.Name == b.Name && slices.Equal(a.Commands, b.Commands)
	})
}

// Missing lists, for people, what need asks for that c lacks: whole
// domains, commands, and versions newer than c's. It is empty when c
// covers need.
func (c Capabilities) Missing(need Capabilities) []string {
	var out []string
	for _, d := range need.Domains {
		if !c.HasDomain(d.Name) {
			out = append(out, "domain "+d.Name)
			continue
		}
		for _, cmd := range d.Commands {
			have, ok := c.lookup(cmd.Type)
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s.%s", d.Name, cmd.Name))
			case have.cmd.Version < cmd.Version:
				out = append(out, fmt.Sprintf("%s.%s v%d (has v%d)", d.Name, cmd.Name, cmd.Version, have.cmd.Version))
			}
		}
	}
	return out
}

// String is a short description: "capacity(5) nodes(2)".
func (c Capabilities) String() string {
	if len(c.Domains) == 0 {
		return "none"
	}
	parts := make([]string, len(c.Domains))
	for i, d := range c.Domains {
		parts[i] = fmt.Sprintf("%s(%d)", d.Name, len(d.Commands))
	}
	return strings.Join(parts, " ")
}

// Validate checks shape and bounds: sorted, unique, named, versioned, no
// empty domain. Commands and member metadata
// carrying a set are refused when it fails.
func (c Capabilities) Validate() error {
	if len(c.Domains) > MaxCapabilityDomains {
		return errs.Errorf(errs.CodeInvalid, "capabilities: %d domains, more than %d", len(c.Domains), MaxCapabilityDomains)
	}
	seen := map[log.Type]bool{}
	for i, d := range c.Domains {
		if err := bounds.Identifier("capabilities: domain name", d.Name); err != nil {
			return err
		}
		if i > 0 && c.Domains[i-1].Name >= d.Name {
			return errs.Errorf(errs.CodeInvalid, "capabilities: domains not sorted and unique at %q", d.Name)
		}
		if len(d.Commands) == 0 || len(d.Commands) > MaxCapabilityCommands {
			return errs.Errorf(errs.CodeInvalid, "capabilities: domain %q has %d commands, want 1..%d", d.Name, len(d.Commands), MaxCapabilityCommands)
		}
		for j, cmd := range d.Commands {
			if err := bounds.Identifier("capabilities: command name", cmd.Name); err != nil {
				return err
			}
			switch {
			case cmd.Type == 0:
				return errs.Errorf(errs.CodeInvalid, "capabilities: command type 0 cannot be listed")
			case cmd.Version == 0:
				return errs.Errorf(errs.CodeInvalid, "capabilities: %s.%s has version 0", d.Name, cmd.Name)
			case j > 0 && d.Commands[j-1].Type >= cmd.Type:
				return errs.Errorf(errs.CodeInvalid, "capabilities: %s commands not sorted and unique at type %d", d.Name, cmd.Type)
			case seen[cmd.Type]:
				return errs.Errorf(errs.CodeInvalid, "capabilities: command type %d listed under two domains", cmd.Type)
			}
			seen[cmd.Type] = true
		}
	}
	return nil
}

// Served is what this FSM's binary serves: its modules' commands.
func (f *FSM) Served() Capabilities { return f.served }

// Enabled is the enabled set of the local state; ok is false while the
// state is ungated (no set enabled yet: every known command applies).
func (f *FSM) Enabled() (c Capabilities, ok bool) {
	e := f.enabled.Load()
	if e == nil {
		return Capabilities{}, false
	}
	return *e, true
}

// CapabilitiesView answers QueryCapabilities: the cluster's enabled set as
// the answering replica holds it, and what that replica's binary serves.
type CapabilitiesView struct {
	// Gated is false until the cluster enables a set; until then Enabled
	// is what the answering replica serves, which is what applies.
	Gated   bool         `msgpack:"gated" json:"gated"`
	Enabled Capabilities `msgpack:"enabled" json:"enabled"`
	Served  Capabilities `msgpack:"served" json:"served"`
}

func (f *FSM) capabilitiesQuerySpec() QuerySpec {
	return QuerySpec{Type: QueryCapabilities, Name: "capabilities", Run: func(rt *ReadTx, _ []byte) (any, error) {
		m := readMeta(rt.Txn)
		v := CapabilitiesView{Enabled: f.served, Served: f.served}
		if m.Enabled != nil {
			v.Gated, v.Enabled = true, *m.Enabled
		}
		return v, nil
	}}
}

// enableSpec is CmdEnable: the leader replaces the enabled set. Only the
// cluster proposes it; Apply validates it like any payload.
func enableSpec() CommandSpec {
	return CommandSpec{Type: CmdEnable, Name: "enable", MaxVersion: 1, Internal: true,
		Apply: func(tx *Tx, cmd *log.Command) (any, error) {
			var c Capabilities
			if err := decodePayload(cmd.Payload, &c); err != nil {
				return nil, err
			}
			if err := c.Validate(); err != nil {
				return nil, err
			}
			tx.meta.Enabled = &c
			tx.wrote = true // the meta row carries the set
			tx.Emit("capabilities_enabled", c.String(), "")
			return c, nil
		}}
}

// Require asks r for the enabled set and fails with unavailable, naming
// what is missing (also in Detail["missing"]), unless it covers need. A
// client calls it before it submits any work: a cluster that lacks a
// method the client needs is an incompatible deployment, not a place to
// half-do a job.
func Require(ctx context.Context, r Reader, need Capabilities) error {
	var v CapabilitiesView
	if err := Ask(ctx, r, QueryCapabilities, false, struct{}{}, &v); err != nil {
		return err
	}
	if missing := v.Enabled.Missing(need); len(missing) > 0 {
		e := errs.Errorf(errs.CodeUnavailable, "the cluster does not enable %s", strings.Join(missing, ", "))
		e.Detail = map[string]any{"missing": missing}
		return e
	}
	return nil
}
