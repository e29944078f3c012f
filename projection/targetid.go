package projection

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/canon"
)

// tuple is the attested tuple of the spec, the input of a target id.
type tuple struct {
	SchemaVersion      string `json:"schema_version"`
	Capability         string `json:"capability"`
	AgentID            string `json:"agent_id"`
	HarnessType        string `json:"harness_type"`
	InstanceKeyDigest  string `json:"instance_key_digest"`
	WorkspaceKeyDigest string `json:"workspace_key_digest"`
	ProjectionKind     string `json:"projection_kind"`
}

// DeriveTargetID is the target id of an agent's attested tuple: "pt_" and
// the first 32 hex digits of the SHA-256 of the tuple's canonical JSON
// (keys sorted, compact). Session ids and paths are not part of it.
func DeriveTargetID(agentID string, a Attested) (string, error) {
	b, err := canon.Value(tuple{
		SchemaVersion: a.SchemaVersion, Capability: a.Capability, AgentID: agentID, HarnessType: a.HarnessType,
		InstanceKeyDigest: a.InstanceKeyDigest, WorkspaceKeyDigest: a.WorkspaceKeyDigest, ProjectionKind: a.ProjectionKind,
	})
	if err != nil {
		return "", errs.Errorf(errs.CodeInvalid, "attested tuple: %v", err)
	}
	sum := sha256.Sum256(b)
	return "pt_" + hex.EncodeToString(sum[:16]), nil
}
