package projection

import (
	"regexp"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// Bounds (each an explicit error when exceeded).
const (
	// MaxEnvelopeBytes bounds one envelope, as sent and as stored.
	MaxEnvelopeBytes = 256 << 10
	// MaxLeaseTTL bounds lease_ttl_ms: a Wave-1 lease covers one
	// publication and is never renewed, so a long one only blocks others.
	MaxLeaseTTL = time.Hour
	// MaxTargets bounds the targets of a cluster and MaxTargetsPerAgent
	// those of one agent: each holds up to two envelopes and a
	// publication in every replica's memory.
	MaxTargets         = 1024
	MaxTargetsPerAgent = 64
	// MaxWatermark and MaxExpiresAtMs keep integers exact in every JSON
	// reader (2^53 - 1).
	MaxWatermark   = 1<<53 - 1
	MaxExpiresAtMs = 1<<53 - 1
	// maxAttestedBytes bounds each field of the attested tuple.
	maxAttestedBytes = 256
)

var (
	targetIDPattern = regexp.MustCompile(`^pt_[0-9a-f]{32}$`)
	digestPattern   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	tokenPattern    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// attestedPattern: the tuple's plain fields are names and versions,
	// never paths (no '/' or '\'), URLs or free text.
	attestedPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@+=-]*$`)
)

// CheckTargetID requires the derived form pt_<32 lowercase hex digits>,
// the only form that is ever joined to a path.
func CheckTargetID(id string) error {
	if !targetIDPattern.MatchString(id) {
		return errs.New(errs.CodeInvalid, "target_id must be pt_ followed by 32 lowercase hex digits (the id POST /v1/projection/targets derived)")
	}
	return nil
}

func checkDigest(field, v string) error {
	if !digestPattern.MatchString(v) {
		return errs.Errorf(errs.CodeInvalid, "%s must be sha256: followed by 64 lowercase hex digits (a digest, never a raw key or a path)", field)
	}
	return nil
}

func checkTokenHash(h string) error {
	if !tokenPattern.MatchString(h) {
		return errs.New(errs.CodeInvalid, "token hash must be 64 lowercase hex digits")
	}
	return nil
}

func checkChannel(c string) error {
	for _, known := range Channels {
		if c == known {
			return nil
		}
	}
	return errs.Errorf(errs.CodeInvalid, "channel must be one of %s", strings.Join(Channels, ", "))
}

func checkLeaseTTL(ms int64) error {
	if ms < 1 || ms > MaxLeaseTTL.Milliseconds() {
		return errs.Errorf(errs.CodeInvalid, "lease_ttl_ms must be between 1 and %d", MaxLeaseTTL.Milliseconds())
	}
	return nil
}

func checkWatermark(w uint64) error {
	if w > MaxWatermark {
		return errs.Errorf(errs.CodeInvalid, "source_watermark must be at most %d", uint64(MaxWatermark))
	}
	return nil
}

func checkEpoch(e uint64) error {
	if e == 0 {
		return errs.New(errs.CodeInvalid, "fencing_epoch must be the epoch the lease was granted with (at least 1)")
	}
	return nil
}

func (a *Attested) validate() error {
	for _, f := range []struct{ name, v string }{
		{"attested.schema_version", a.SchemaVersion}, {"attested.capability", a.Capability},
		{"attested.harness_type", a.HarnessType}, {"attested.projection_kind", a.ProjectionKind},
	} {
		if len(f.v) == 0 || len(f.v) > maxAttestedBytes || !attestedPattern.MatchString(f.v) || strings.Contains(f.v, "..") {
			return errs.Errorf(errs.CodeInvalid, "%s must be 1 to %d characters of letters, digits and ._:@+=- (not a path)", f.name, maxAttestedBytes)
		}
	}
	if err := checkDigest("attested.instance_key_digest", a.InstanceKeyDigest); err != nil {
		return err
	}
	return checkDigest("attested.workspace_key_digest", a.WorkspaceKeyDigest)
}

// validate checks a registration's shape; bindings must be sorted by
// channel (the service sorts them), each channel once.
func (c *registerCmd) validate() error {
	if err := bounds.Identifier("agent_id", c.AgentID); err != nil {
		return err
	}
	if err := c.Attested.validate(); err != nil {
		return err
	}
	if len(c.Channels) == 0 || len(c.Channels) > len(Channels) {
		return errs.Errorf(errs.CodeInvalid, "a target admits 1 to %d channels, not %d", len(Channels), len(c.Channels))
	}
	for i, b := range c.Channels {
		if err := checkChannel(b.Channel); err != nil {
			return err
		}
		if i > 0 && c.Channels[i-1].Channel >= b.Channel {
			return errs.Errorf(errs.CodeInvalid, "channel %q is listed twice (or the list is not sorted)", b.Channel)
		}
		if err := bounds.Identifier("producer", b.Producer); err != nil {
			return err
		}
	}
	return nil
}

// agentFor is the agent a registration is for: the verified principal,
// or the agent a trusted embedding host names.
func agentFor(p identity.Principal, requested string) (string, error) {
	if p.Trusted() {
		if requested == "" {
			return "", errs.New(errs.CodeInvalid, "agent_id is required from a trusted host (an authenticated caller registers its own targets)")
		}
		return requested, nil
	}
	if !p.HasRole(identity.RoleMember) {
		return "", errs.Errorf(errs.CodeForbidden, "principal %q may not register projection targets (role member or above)", p.ID)
	}
	if requested != "" && requested != p.ID {
		return "", errs.Errorf(errs.CodeForbidden, "agent_id must be the caller's own id %q", p.ID)
	}
	return p.ID, nil
}
