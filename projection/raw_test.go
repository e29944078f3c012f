package projection_test

import (
	"context"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/projection"
)

// The payloads of the projection commands and queries, written out from
// their msgpack field names so that tests can propose what the service
// would refuse to build: the FSM validates again.
type (
	rawConfig struct {
		LeaseTTLMs int64 `msgpack:"lease_ttl_ms"`
	}
	rawRegister struct {
		AgentID  string                      `msgpack:"agent_id"`
		Attested projection.Attested         `msgpack:"attested"`
		Channels []projection.ChannelBinding `msgpack:"channels"`
	}
	rawSubmit struct {
		TargetID        string `msgpack:"target_id"`
		Channel         string `msgpack:"channel"`
		SourceWatermark uint64 `msgpack:"source_watermark"`
		Envelope        []byte `msgpack:"envelope"`
	}
	rawAcquire struct {
		TargetID             string `msgpack:"target_id"`
		HolderInstanceDigest string `msgpack:"holder_instance_digest"`
		TokenSHA256          string `msgpack:"token_sha256"`
	}
	rawFence struct {
		TargetID     string `msgpack:"target_id"`
		TokenSHA256  string `msgpack:"token_sha256"`
		FencingEpoch uint64 `msgpack:"fencing_epoch"`
	}
	rawTarget struct {
		TargetID string `msgpack:"target_id"`
	}
)

func proposeRaw(t *testing.T, ctx context.Context, l *fsmtest.Local, typ log.Type, payload any) *fsm.Response {
	t.Helper()
	res, err := l.Propose(ctx, log.Command{Type: typ, Version: 1, Payload: log.MustMarshal(payload)})
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	return res
}

// Commands the service would never build are refused by the FSM, and
// change nothing.
func TestFSMValidatesAgain(t *testing.T) {
	e := newEnv(t)
	e.setTTL(60_000)
	id := e.target("raw")
	route := projection.ChannelComputedRoute
	canonical := []byte(`{"body":1,"citations":[],"expires_at_ms":` + "1767229200000" + `,"not_authority":true,"provenance":{},"schema":"computed-route.v1","watermark":1}`)
	notCanonical := []byte(`{"schema":"computed-route.v1","body":1,"citations":[],"expires_at_ms":1767229200000,"not_authority":true,"provenance":{},"watermark":1}`)
	hash := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		who     identity.Principal
		typ     log.Type
		payload any
		code    errs.Code
	}{
		{"unsorted channels", agent, projection.CmdRegisterTarget, rawRegister{AgentID: agent.ID, Attested: attested("x"),
			Channels: []projection.ChannelBinding{bothChannels[0], bothChannels[1]}}, errs.CodeInvalid},
		{"another agent's registration", agent, projection.CmdRegisterTarget, rawRegister{AgentID: agent2.ID, Attested: attested("x"),
			Channels: bothChannels[1:]}, errs.CodeForbidden},
		{"a path as target", router, projection.CmdSubmit, rawSubmit{TargetID: "../../etc", Channel: route, SourceWatermark: 1, Envelope: canonical}, errs.CodeInvalid},
		{"an envelope not canonical", router, projection.CmdSubmit, rawSubmit{TargetID: id, Channel: route, SourceWatermark: 1, Envelope: notCanonical}, errs.CodeInvalid},
		{"an envelope of another watermark", router, projection.CmdSubmit, rawSubmit{TargetID: id, Channel: route, SourceWatermark: 2, Envelope: canonical}, errs.CodeInvalid},
		{"a watermark beyond 2^53", router, projection.CmdSubmit, rawSubmit{TargetID: id, Channel: route, SourceWatermark: 1 << 60, Envelope: canonical}, errs.CodeInvalid},
		{"a raw token instead of a hash", agent, projection.CmdAcquire, rawAcquire{TargetID: id, HolderInstanceDigest: digest("h"), TokenSHA256: "secret"}, errs.CodeInvalid},
		{"an uppercase hash", agent, projection.CmdAcquire, rawAcquire{TargetID: id, HolderInstanceDigest: digest("h"), TokenSHA256: strings.ToUpper(hash)}, errs.CodeInvalid},
		{"publish at epoch 0", agent, projection.CmdPublish, rawFence{TargetID: id, TokenSHA256: hash}, errs.CodeInvalid},
		{"release of no lease", agent, projection.CmdRelease, rawFence{TargetID: id, TokenSHA256: hash, FencingEpoch: 3}, errs.CodeStaleFence},
		{"config 0", admin, projection.CmdSetConfig, rawConfig{}, errs.CodeInvalid},
		{"unknown fields", agent, projection.CmdPublish, map[string]any{"target_id": id, "token_sha256": hash, "fencing_epoch": 1, "path": "/x"}, errs.CodeInvalid},
	} {
		e.unchanged(tc.name, func() {
			res := proposeRaw(t, as(tc.who), e.l, tc.typ, tc.payload)
			if errs.CodeOf(res.Err) != tc.code {
				t.Fatalf("%s: %v, want %s", tc.name, res.Err, tc.code)
			}
		})
	}
}
