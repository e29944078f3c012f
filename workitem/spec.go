package workitem

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/canon"
)

// itemSpec is one item to admit as a command carries it: a submit's
// request, or one child of a batch, without tenant and graph (the
// command names them once) and with metadata in canonical form.
type itemSpec struct {
	WorkItemID string `msgpack:"work_item_id"`
	// IdempotencyKey is a batch child's own key (echoed only); a single
	// submit's key is the envelope's.
	IdempotencyKey    string   `msgpack:"idempotency_key"`
	CommandDigest     string   `msgpack:"command_digest"`
	Kind              string   `msgpack:"kind"`
	Priority          int64    `msgpack:"priority"`
	DependsOn         []string `msgpack:"depends_on"`
	InputRef          string   `msgpack:"input_ref"`
	PolicyDigest      string   `msgpack:"policy_digest"`
	CatalogDigest     string   `msgpack:"catalog_digest"`
	ModelDigest       string   `msgpack:"model_digest"`
	MaxAttempts       int64    `msgpack:"max_attempts"`
	DeadlineUnix      *int64   `msgpack:"deadline_unix"`
	Metadata          []byte   `msgpack:"metadata"`
	ProvenanceRefs    []string `msgpack:"provenance_refs"`
	MaxTenantInFlight int64    `msgpack:"max_tenant_in_flight"`
}

// submitCmd is the payload of CmdSubmit; batchCmd of CmdSubmitBatch.
type submitCmd struct {
	TenantRef string   `msgpack:"tenant_ref"`
	GraphRef  string   `msgpack:"graph_ref"`
	Item      itemSpec `msgpack:"item"`
}

type batchCmd struct {
	TenantRef string     `msgpack:"tenant_ref"`
	GraphRef  string     `msgpack:"graph_ref"`
	Items     []itemSpec `msgpack:"items"`
}

// specOf turns a request into the spec a command carries: metadata in
// canonical form ({} when absent or null). Bounds are checked by
// validate, here and again in the FSM.
func specOf(r SubmitRequest, prefix string) (itemSpec, error) {
	meta := []byte("{}")
	if raw := bytes.TrimSpace(r.Metadata); len(raw) > 0 && string(raw) != "null" {
		c, err := canon.JSON(raw)
		if err != nil {
			return itemSpec{}, fieldErr(prefix+"metadata", "%v", err)
		}
		meta = c
	}
	return itemSpec{
		WorkItemID: r.WorkItemID, CommandDigest: r.CommandDigest, Kind: r.Kind, Priority: r.Priority,
		DependsOn: r.DependsOn, InputRef: r.InputRef, PolicyDigest: r.PolicyDigest, CatalogDigest: r.CatalogDigest,
		ModelDigest: r.ModelDigest, MaxAttempts: r.MaxAttempts, DeadlineUnix: r.DeadlineUnix, Metadata: meta,
		ProvenanceRefs: r.ProvenanceRefs, MaxTenantInFlight: r.MaxTenantInFlight,
	}, nil
}

// validate checks every bound of one item as submit version v does;
// field names carry prefix ("requests[3]." for a batch child). From
// version 3 on policy_digest, catalog_digest and model_digest are
// digests, as command_digest always was ("sha256:" and 64 lowercase hex
// digits); before, they were any identifier.
func (s *itemSpec) validate(prefix string, v uint16) error {
	f := func(name string) string { return prefix + name }
	if err := optionalIdent(f("work_item_id"), s.WorkItemID); err != nil {
		return err
	}
	if strings.HasPrefix(s.WorkItemID, generatedIDPrefix) {
		return fieldErr(f("work_item_id"), "ids starting with %q are the FSM's to give", generatedIDPrefix)
	}
	if err := optionalIdent(f("idempotency_key"), s.IdempotencyKey); err != nil {
		return err
	}
	if err := ident(f("kind"), s.Kind); err != nil {
		return err
	}
	for _, field := range []struct{ name, v string }{
		{"command_digest", s.CommandDigest}, {"policy_digest", s.PolicyDigest}, {"catalog_digest", s.CatalogDigest}, {"model_digest", s.ModelDigest},
	} {
		check := checkDigest
		if v < digestsChecked && field.name != "command_digest" {
			check = ident
		}
		if err := check(f(field.name), field.v); err != nil {
			return err
		}
	}
	if err := checkRange(f("priority"), s.Priority, -MaxPriority, MaxPriority); err != nil {
		return err
	}
	if err := checkRange(f("max_attempts"), s.MaxAttempts, 1, MaxAttempts); err != nil {
		return err
	}
	if err := checkRange(f("max_tenant_in_flight"), s.MaxTenantInFlight, 1, MaxTenantInFlight); err != nil {
		return err
	}
	if s.DeadlineUnix != nil {
		if err := checkRange(f("deadline_unix"), *s.DeadlineUnix, 1, MaxDeadlineUnix); err != nil {
			return err
		}
	}
	if n := len(s.InputRef); n == 0 || n > MaxInputRefBytes || !utf8.ValidString(s.InputRef) {
		return fieldErr(f("input_ref"), "must be 1 to %d bytes of UTF-8, not %d bytes", MaxInputRefBytes, n)
	}
	if n := len(s.Metadata); n > MaxMetadataBytes {
		return fieldErr(f("metadata"), "is %d bytes in canonical form, more than %d", n, MaxMetadataBytes)
	}
	if len(s.Metadata) == 0 || s.Metadata[0] != '{' || !canon.IsCanonical(s.Metadata) {
		return fieldErr(f("metadata"), "must be a JSON object in canonical form")
	}
	if len(s.DependsOn) > MaxDependencies {
		return fieldErr(f("depends_on"), "names %d dependencies, more than %d", len(s.DependsOn), MaxDependencies)
	}
	seen := make(map[string]bool, len(s.DependsOn))
	for i, d := range s.DependsOn {
		if err := ident(f(fmt.Sprintf("depends_on[%d]", i)), d); err != nil {
			return err
		}
		if seen[d] {
			return fieldErr(f(fmt.Sprintf("depends_on[%d]", i)), "names %q twice", d)
		}
		seen[d] = true
	}
	if len(s.ProvenanceRefs) > MaxProvenanceRefs {
		return fieldErr(f("provenance_refs"), "holds %d refs, more than %d", len(s.ProvenanceRefs), MaxProvenanceRefs)
	}
	for i, p := range s.ProvenanceRefs {
		if err := ident(f(fmt.Sprintf("provenance_refs[%d]", i)), p); err != nil {
			return err
		}
	}
	return nil
}

// checkScope validates tenant and graph refs (the graph already
// defaulted: a command always names one).
func checkScope(tenant, graph string) error {
	if err := ident("tenant_ref", tenant); err != nil {
		return err
	}
	return ident("graph_ref", graph)
}

// The submit and submit-batch versions whose checks differ (the
// cluster's enabled version in Apply; the newest in the service, which
// checks first): version 2 reads the extension under its closed schema,
// version 3 checks every digest and the extension's sensitive-value
// rules, and keys the ledger by tenant (ledger.go).
const (
	extensionChecked = 2
	digestsChecked   = 3
	newestSubmit     = 3
)

func (c *submitCmd) validate(v uint16) error {
	if err := checkScope(c.TenantRef, c.GraphRef); err != nil {
		return err
	}
	if c.Item.IdempotencyKey != "" {
		return fieldErr("idempotency_key", "a single submit's key travels in the command envelope")
	}
	return c.Item.validate("", v)
}

func (c *batchCmd) validate(v uint16) error {
	if err := checkScope(c.TenantRef, c.GraphRef); err != nil {
		return err
	}
	if len(c.Items) < 1 || len(c.Items) > MaxBatch {
		return fieldErr("requests", "a batch holds 1 to %d requests, not %d", MaxBatch, len(c.Items))
	}
	ids := map[string]int{}
	keys := map[string]int{}
	for i := range c.Items {
		prefix := fmt.Sprintf("requests[%d].", i)
		s := &c.Items[i]
		if err := s.validate(prefix, v); err != nil {
			return err
		}
		if j, dup := ids[s.WorkItemID]; dup && s.WorkItemID != "" {
			return fieldErr(prefix+"work_item_id", "repeats requests[%d]'s %q", j, s.WorkItemID)
		}
		ids[s.WorkItemID] = i
		if j, dup := keys[s.IdempotencyKey]; dup && s.IdempotencyKey != "" {
			return fieldErr(prefix+"idempotency_key", "repeats requests[%d]'s key", j)
		}
		keys[s.IdempotencyKey] = i
	}
	return nil
}

// checkPayload bounds an encoded submit or batch payload.
func checkPayload(n int) error {
	if n > MaxPayloadBytes {
		return errs.Errorf(errs.CodeTooLarge, "request of %d bytes encoded; at most %d (split the batch)", n, MaxPayloadBytes)
	}
	return nil
}
