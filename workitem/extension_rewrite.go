package workitem

import (
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// rewriteCmd is the payload of CmdRewriteExtension.
type rewriteCmd struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	Fence      uint64 `msgpack:"fence"`
	// Extension is the record in canonical JSON.
	Extension []byte `msgpack:"extension"`
}

// rewriteSensitive is the version of workitem_extension_rewrite from
// which a record answers to extension.IdentifiersV2: a new one must, and
// one that does not is unreadable, so that an admin can rewrite it.
const rewriteSensitive = 2

// validate checks the command, reading the record under rules r.
func (c *rewriteCmd) validate(r recordRules) error {
	if err := ident("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := ident("work_item_id", c.WorkItemID); err != nil {
		return err
	}
	if len(c.Extension) > MaxMetadataBytes || len(c.Extension) == 0 || c.Extension[0] != '{' || !canon.IsCanonical(c.Extension) {
		return fieldErr("extension", "must be a JSON object in canonical form, at most %d bytes", MaxMetadataBytes)
	}
	return checkExtension("extension", c.Extension, r)
}

// recordRules are the rules a record is read under: which canonical
// JSON its fingerprint may follow (fingerprintRules) and which
// identifiers it may hold.
type recordRules struct {
	fingerprint extension.Rules
	identifiers extension.Identifiers
}

// newestRules are what the service checks a request under, before it
// proposes it: this binary's newest.
var newestRules = recordRules{extension.RFC8785OrLegacy, extension.CurrentIdentifiers}

func (r recordRules) parse(raw []byte) (*extension.Extension, error) {
	return extension.ParseWith(raw, r.fingerprint, r.identifiers)
}

// rulesAt are the rules Apply reads a record under: the fingerprint's
// per submit's enabled version (fingerprintRules), the identifiers'
// IdentifiersV2 from version from of the command being applied on, so
// that a log replays as it was applied.
func rulesAt(tx *fsm.Tx, cmd log.Type, from uint16) recordRules {
	r := recordRules{fingerprint: fingerprintRules(tx), identifiers: extension.IdentifiersV1}
	if tx.EnabledVersion(cmd) >= from {
		r.identifiers = extension.IdentifiersV2
	}
	return r
}

// checkExtension parses a record under the closed schema and rules r:
// an invalid error naming field.<path>, with detail.reason
// extension_invalid or fingerprint_mismatch (and detail.class for a
// sensitive value).
func checkExtension(field string, raw []byte, r recordRules) error {
	if _, err := r.parse(raw); err != nil {
		e := errs.From(err)
		n := *e
		n.Detail = map[string]any{"reason": e.Detail["reason"], "field": field}
		if class, ok := e.Detail["class"]; ok {
			n.Detail["class"] = class
		}
		if f, _ := e.Detail["field"].(string); f != "" {
			n.Detail["field"] = field + "." + f
		}
		return &n
	}
	return nil
}

// applyRewriteExtension is the governed migration of an item created
// before the extension existed (or whose record cannot be read): an
// admin sets metadata.resource_reservation, beside whatever else the
// metadata holds, presenting the item's exact current fence (0 for an
// item never claimed). A readable record is immutable (conflict); an
// ended item is a conflict too.
func applyRewriteExtension(tx *fsm.Tx, _ *log.Command, c *rewriteCmd) (any, error) {
	rules := rulesAt(tx, CmdRewriteExtension, rewriteSensitive) // as rewriteExtensionCommand validated
	old, err := existingItem(tx, c.TenantRef, c.WorkItemID)
	if err != nil {
		return nil, err
	}
	switch {
	case old.Fence != c.Fence:
		e := errs.Errorf(errs.CodeStaleFence, "work item %q is at fence %d; %d was presented", c.WorkItemID, old.Fence, c.Fence)
		e.Detail = map[string]any{"status": old.Status, "attempt": old.Attempt, "fence": old.Fence}
		return nil, e
	case old.Status != StatusPending && old.Status != StatusClaimed:
		e := errs.Errorf(errs.CodeConflict, "work item %q has ended %s", c.WorkItemID, old.Status)
		e.Detail = map[string]any{"status": old.Status}
		return nil, e
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(old.Metadata, &top); err != nil {
		return nil, internal("read stored metadata", err)
	}
	if raw, ok := top[extensionField]; ok {
		if _, err := rules.parse(raw); err == nil {
			return nil, errs.Errorf(errs.CodeConflict, "work item %q has a readable extension; it is immutable", c.WorkItemID)
		}
	}
	top[extensionField] = c.Extension
	b, err := json.Marshal(top)
	if err != nil {
		return nil, internal("encode metadata", err)
	}
	meta, err := canon.JSON(b)
	if err != nil {
		return nil, internal("canonicalize metadata", err)
	}
	if len(meta) > MaxMetadataBytes {
		return nil, fieldErr("extension", "would make the metadata %d bytes in canonical form, more than %d", len(meta), MaxMetadataBytes)
	}
	it := *old
	it.Metadata, it.UpdatedAtMs = meta, tx.Now
	if err := put(tx, old, &it); err != nil {
		return nil, err
	}
	if _, err := emit(tx, EventExtensionRewritten, &it); err != nil {
		return nil, err
	}
	return &ItemResult{WorkItem: it}, nil
}

// checkSpecExtensions checks each spec's metadata.resource_reservation,
// if it has one, under rules r (submit from version 2 on; the service
// always, under the current rules).
func checkSpecExtensions(specs []itemSpec, prefix string, r recordRules) error {
	for i := range specs {
		raw, err := itemExtension(specs[i].Metadata)
		if err != nil {
			return err
		}
		if raw == nil {
			continue
		}
		field := "metadata." + extensionField
		if prefix != "" {
			field = fmt.Sprintf(prefix, i) + field
		}
		if err := checkExtension(field, raw, r); err != nil {
			if prefix != "" {
				err = withDetail(err, "request_index", i)
			}
			return err
		}
	}
	return nil
}
