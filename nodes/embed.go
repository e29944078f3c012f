package nodes

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Node commands inside another module's command. A module built on the
// node primitives (the concept authority) may apply a create or a CAS
// inside a command of its own, so that a check of its own replicated
// state (the authority's policy set) and the node's write are decided by
// one log entry, on every replica alike. The node command travels in the
// module's payload as the version and bytes it would have as a command of
// its own (CreateRequest.Command, CASRequest.Command); the module's
// handler passes them to the ApplyCreate or ApplyCAS of its Embedded
// (Embed, built with the adapters it accepts, as static as a module's
// own configuration), which check the caller's access as node_create and
// node_cas do and answer what they answer (a CreateResult, a CASResult).

// Embedded applies node commands inside another module's commands, with
// the access its options give (AcceptAdapters).
type Embedded struct{ a access }

// Embed returns what a module built on the node primitives applies node
// commands with inside its own commands. opts name the in-server
// adapters accepted in place of the admin role (AcceptAdapters), under
// the same rule as the module's: every replica must be given the same.
func Embed(opts ...Option) Embedded { return Embedded{a: newAccess(opts)} }

// Command is the node_create command req asks for: its version and its
// payload.
func (req CreateRequest) Command() (uint16, []byte, error) {
	cmd, err := req.command()
	if err != nil {
		return 0, nil, err
	}
	body, err := log.Marshal(cmd)
	if err != nil {
		return 0, nil, errs.Errorf(errs.CodeInvalid, "encode node_create: %v", err)
	}
	return cmd.version(), body, nil
}

// Command is the node_cas command req asks for: its version and its
// payload.
func (req CASRequest) Command() (uint16, []byte, error) {
	cmd, err := req.command()
	if err != nil {
		return 0, nil, err
	}
	body, err := log.Marshal(cmd)
	if err != nil {
		return 0, nil, errs.Errorf(errs.CodeInvalid, "encode node_cas: %v", err)
	}
	return cmd.version(), body, nil
}

// ApplyCreate applies the node_create of version v and payload inside
// the handler whose transaction tx is. bind is called only when no node
// has the id yet, with the decoded command: it may change its properties
// (canonical JSON values, as CanonicalFields makes them; checked again
// after bind) or refuse the create with an error. A node that exists is
// answered as node_create answers it (created false, the stored node),
// without calling bind.
func (e Embedded) ApplyCreate(tx *fsm.Tx, v uint16, payload []byte, bind func(*CreateCommand) error) (any, error) {
	if err := e.embedded(tx, CmdCreate, v); err != nil {
		return nil, err
	}
	c, err := decodeCreateReflective(&log.Command{Type: CmdCreate, Version: v, Payload: payload})
	if err != nil {
		return nil, err
	}
	if err := validateNodeID(c.NodeID); err != nil {
		return nil, err
	}
	if existing, err := getStored(tx, c.NodeID); err != nil {
		return nil, err
	} else if existing != nil {
		return storedResult{created: false, node: existing}.boxed(), nil
	}
	if err := bind(&c); err != nil {
		return nil, err
	}
	return create(tx, v, argsOf(c))
}

// ApplyCAS applies the node_cas of version v and payload inside the
// handler whose transaction tx is. bind is called with the decoded
// command before anything is checked: it may change its updates
// (canonical JSON values) or refuse the CAS with an error.
func (e Embedded) ApplyCAS(tx *fsm.Tx, v uint16, payload []byte, bind func(*CASCommand) error) (any, error) {
	if err := e.embedded(tx, CmdCAS, v); err != nil {
		return nil, err
	}
	c, err := decodeCAS(&log.Command{Type: CmdCAS, Version: v, Payload: payload})
	if err != nil {
		return nil, err
	}
	if err := bind(&c); err != nil {
		return nil, err
	}
	return compareAndSet(tx, v, &c)
}

// embedded checks what the FSM checks of a command of type t and version
// v of its own, and the caller's access. A version the cluster has not
// enabled is refused as the FSM refuses it (unavailable); so is every
// version above 1 in ungated state, where EnabledVersion is 1 (a module
// sends one only where the cluster enables it, see IndexFieldsEnabled).
func (e Embedded) embedded(tx *fsm.Tx, t log.Type, v uint16) error {
	if v < 1 || v > IndexVersion {
		return errs.Errorf(errs.CodeInvalid, "node command type %d: unsupported version %d (1 to %d)", t, v, IndexVersion)
	}
	if v > 1 && tx.EnabledVersion(t) < v {
		return errs.Errorf(errs.CodeUnavailable, "node command type %d version %d is not enabled in this cluster", t, v)
	}
	return e.a.raw(tx.Principal, tx.Adapter)
}
