package fsmtest

import (
	"github.com/arbiterhq/arbiter/fsm"
	pub "github.com/arbiterhq/arbiter/fsm/fsmtest"
)

// The in-process driver is public (fsm/fsmtest), for embedders' unit
// tests and the authority's fixture; these names keep the repository's
// tests, which also use the helpers below, on one import.

// Local is fsm/fsmtest.Local.
type Local = pub.Local

// Epoch is the clock a Local starts at: 2026-01-01T00:00:00Z in unix ms.
const Epoch = pub.Epoch

// New returns a Local over a fresh FSM with the given modules.
func New(modules ...fsm.Module) (*Local, error) { return pub.New(modules...) }

// AtVersion is set with every command of the named domain at version v
// (fsm/fsmtest.AtVersion).
func AtVersion(set fsm.Capabilities, domain string, v uint16) fsm.Capabilities {
	return pub.AtVersion(set, domain, v)
}
