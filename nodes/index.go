package nodes

import (
	"encoding/json"
	"iter"
	"slices"
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Index fields. A fence must stay above every fence issued before it, and
// a counter kept in the state cannot promise that: restoring a backup
// rolls the counter back with everything else, and the next holder is
// handed a number an earlier holder already had. The log index of the
// entry that writes a node never goes backwards, restores included, so a
// create or CAS may ask the FSM to write that index into fields
// (SetIndex). Such fields hold JSON integers.
//
// SetIndex is version 2 of node_create and node_cas: a binary that knows
// only version 1 refuses the field, so a command that carries it is sent
// as version 2, which a cluster refuses (unavailable) on every replica
// until every member serves it (see fsm.Capabilities; a bare FSM whose
// state no set has gated applies it, as it applies every version it
// knows). A version 1 command that carries the field, even empty, is
// refused as invalid, as a version 1 binary refuses it.
type IndexFields struct {
	// SetIndex sets each named field to the log index of the entry that
	// applies the command, after the other updates.
	SetIndex []string `msgpack:"set_index,omitempty" json:"set_index,omitempty"`
}

// IndexVersion is the command version that carries SetIndex.
const IndexVersion = 2

// version is the command version a payload with these fields needs.
func (f *IndexFields) version() uint16 {
	if len(f.SetIndex) > 0 {
		return IndexVersion
	}
	return 1
}

// check validates SetIndex for a command of version v: identifiers, no
// field named twice, none also written by the command in another way
// (written, or set to the time by setNow), and none in a version 1
// command.
func (f *IndexFields) check(v uint16, written func(field string) bool, setNow map[string]int64) error {
	if len(f.SetIndex) == 0 {
		return nil
	}
	if v < IndexVersion {
		return errs.Errorf(errs.CodeInvalid, "set_index needs version %d of the command, not %d", IndexVersion, v)
	}
	if len(f.SetIndex) > MaxFieldsPerCAS {
		return errs.Errorf(errs.CodeInvalid, "more than %d set_index fields", MaxFieldsPerCAS)
	}
	for i, k := range f.SetIndex {
		if err := bounds.Identifier("set_index field", k); err != nil {
			return err
		}
		if slices.Contains(f.SetIndex[:i], k) {
			return errs.Errorf(errs.CodeInvalid, "set_index names %q twice", k)
		}
		if _, timed := setNow[k]; timed || written(k) {
			return errs.Errorf(errs.CodeInvalid, "field %q is both set to the index and written otherwise", k)
		}
	}
	return nil
}

// values are the fields set_index writes: each the entry's index.
func (f *IndexFields) values(index uint64) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for _, k := range f.SetIndex {
			if !yield(k, json.RawMessage(strconv.FormatUint(index, 10))) {
				return
			}
		}
	}
}

// writes counts what the CAS changes; a CAS that changes nothing is
// refused.
func (c *CASCommand) writes() int {
	return len(c.Updates) + len(c.SetNow) + len(c.SetIndex) + len(c.AddLabels) + len(c.RemoveLabels)
}

// IndexFieldsView is the answer of QueryIndexFields.
type IndexFieldsView struct {
	Enabled bool `msgpack:"enabled" json:"enabled"`
}

// runIndexFields answers QueryIndexFields. It reads only the enabled set,
// which is no secret (GET /v1/cluster/capabilities shows it to anyone
// authenticated), so any principal may ask.
func runIndexFields(rt *fsm.ReadTx, _ []byte) (any, error) {
	return IndexFieldsView{Enabled: rt.EnabledVersion(CmdCreate) >= IndexVersion && rt.EnabledVersion(CmdCAS) >= IndexVersion}, nil
}

// Version 1 of node_create and node_cas, as a version 1 binary decodes
// them: without set_index. A version 1 payload is decoded into these
// shapes, which refuse the key whatever its value (an empty list and nil
// included), exactly as such a binary does, so that replicas running
// either release answer alike.
type createCommandV1 struct {
	NodeID     string                     `msgpack:"node_id"`
	Labels     []string                   `msgpack:"labels"`
	Properties map[string]json.RawMessage `msgpack:"properties"`
	SetNow     map[string]int64           `msgpack:"set_now,omitempty"`
}

type casCommandV1 struct {
	NodeID     string                     `msgpack:"node_id"`
	Conditions map[string]json.RawMessage `msgpack:"conditions"`
	Updates    map[string]json.RawMessage `msgpack:"updates"`
	TimeFields `msgpack:",inline"`
	LabelEdits `msgpack:",inline"`
}

// decodeCreate decodes a node_create payload by its version's schema.
func decodeCreate(cmd *log.Command) (createArgs, error) {
	if c, ok := decodeCreateDirect(cmd.Payload, cmd.Version >= IndexVersion); ok {
		return c, nil
	}
	c, err := decodeCreateReflective(cmd)
	return argsOf(c), err
}

// decodeCreateReflective decodes what decodeCreateDirect declines (and,
// in the tests, what it takes, to hold the two to the same answer).
func decodeCreateReflective(cmd *log.Command) (CreateCommand, error) {
	return decodeByVersion(cmd, func(c createCommandV1) CreateCommand {
		return CreateCommand{NodeID: c.NodeID, Labels: c.Labels, Properties: c.Properties, SetNow: c.SetNow}
	})
}

// decodeCAS decodes a node_cas payload by its version's schema.
func decodeCAS(cmd *log.Command) (CASCommand, error) {
	return decodeByVersion(cmd, func(c casCommandV1) CASCommand {
		return CASCommand{NodeID: c.NodeID, Conditions: c.Conditions, Updates: c.Updates, TimeFields: c.TimeFields, LabelEdits: c.LabelEdits}
	})
}

// decodeByVersion decodes a payload of IndexVersion or later as T, and
// an older one as its version 1 shape V1, converted by from.
func decodeByVersion[T, V1 any](cmd *log.Command, from func(V1) T) (T, error) {
	var c T
	if cmd.Version >= IndexVersion {
		err := fsm.DecodePayload(cmd.Payload, &c)
		return c, err
	}
	var v1 V1
	if err := fsm.DecodePayload(cmd.Payload, &v1); err != nil {
		return c, err
	}
	return from(v1), nil
}
