package projection

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Service is the typed Go API of projections over any Proposer and
// Reader: a cluster node, a remote cluster (cluster.Remote) or a bare
// FSM in tests. Requests are checked here first (a bad one is never
// proposed) and again by the FSM. The caller's identity is the principal
// on the context (none: a trusted embedding host).
type Service struct {
	p      fsm.Proposer
	r      fsm.Reader
	random io.Reader
}

// NewService returns the projection API over p and r.
func NewService(p fsm.Proposer, r fsm.Reader) *Service {
	return &Service{p: p, r: r, random: defaultRandom}
}

// SetConfig sets the replicated lease_ttl_ms (admin only).
func (s *Service) SetConfig(ctx context.Context, req ConfigRequest) (*Config, error) {
	if err := checkLeaseTTL(req.LeaseTTLMs); err != nil {
		return nil, err
	}
	var out Config
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdSetConfig}, setConfigCmd{LeaseTTLMs: req.LeaseTTLMs}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Config reads the replicated configuration.
func (s *Service) Config(ctx context.Context, c fsm.Consistency) (*Config, error) {
	var out Config
	if err := fsm.Ask(ctx, s.r, QueryConfig, c == fsm.Stale, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterTarget admits a target for the calling agent and binds each
// channel to its producer; the id is derived from the attested tuple.
func (s *Service) RegisterTarget(ctx context.Context, req TargetRequest) (*TargetResult, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	agent, err := agentFor(p, req.AgentID)
	if err != nil {
		return nil, err
	}
	channels := slices.Clone(req.Channels)
	slices.SortFunc(channels, func(a, b ChannelBinding) int { return strings.Compare(a.Channel, b.Channel) })
	cmd := registerCmd{AgentID: agent, Attested: req.Attested, Channels: channels}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out TargetResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdRegisterTarget}, cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Submit hands a producer's envelope to its channel. A source conflict
// (same watermark, another envelope) returns the result with the error
// conflict: the channel is degraded until a higher watermark arrives.
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	cmd := submitCmd{TargetID: req.TargetID, Channel: req.Channel, SourceWatermark: req.SourceWatermark}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	env, _, err := canonicalEnvelope(req.Envelope, req.Channel, req.SourceWatermark)
	if err != nil {
		return nil, err
	}
	cmd.Envelope = env
	var out SubmitResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdSubmit}, cmd, &out); err != nil {
		return nil, err
	}
	return &out, out.Decision.Err(out.Message)
}

// Acquire asks for the target's single-publication lease. The token is
// made here, returned once and never stored; a held target is the error
// conflict with detail {fencing_epoch, expires_at_ms, retry_after_ms}.
// An outcome-unknown error leaves the lease possibly granted to a token
// nobody has: it blocks the target until it expires.
func (s *Service) Acquire(ctx context.Context, req AcquireRequest) (*Lease, error) {
	token, hash, err := newToken(s.random)
	if err != nil {
		return nil, err
	}
	cmd := acquireCmd{TargetID: req.TargetID, HolderInstanceDigest: req.HolderInstanceDigest, TokenSHA256: hash}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out Lease
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdAcquire}, cmd, &out); err != nil {
		return nil, err
	}
	out.Token = token
	return &out, nil
}

// Publish publishes the target's channels under the lease the request
// names and consumes it. stale_fence: the token or epoch is not the
// target's current lease, or it was released or consumed; expired: FSM
// time reached its expiry. Either way nothing is written on any node.
// A retry after an unknown outcome answers the same publication
// (Replayed).
func (s *Service) Publish(ctx context.Context, req FenceRequest) (*PublishResult, error) {
	cmd, err := fence(req)
	if err != nil {
		return nil, err
	}
	var out PublishResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdPublish}, cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Release ends the lease the request names if it is still held; a lease
// that already ended is answered with Released false. A token or epoch
// that is not the target's current lease is stale_fence.
func (s *Service) Release(ctx context.Context, req FenceRequest) (*ReleaseResult, error) {
	cmd, err := fence(req)
	if err != nil {
		return nil, err
	}
	var out ReleaseResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdRelease}, cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func fence(req FenceRequest) (*fenceCmd, error) {
	hash, err := tokenHash(req.Token)
	if err != nil {
		return nil, err
	}
	cmd := &fenceCmd{TargetID: req.TargetID, TokenSHA256: hash, FencingEpoch: req.FencingEpoch}
	return cmd, cmd.validate()
}

// Target reads a target: channels, lease, last publication. A target the
// caller may not see (not its agent, producer or an admin) is not_found.
func (s *Service) Target(ctx context.Context, id string, c fsm.Consistency) (*TargetView, error) {
	if err := CheckTargetID(id); err != nil {
		return nil, err
	}
	var out TargetView
	if err := fsm.Ask(ctx, s.r, QueryTarget, c == fsm.Stale, targetQuery{TargetID: id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Current is the target's last publication as stored: the bytes of
// current.json. not_found when there is none.
func (s *Service) Current(ctx context.Context, id string, c fsm.Consistency) (json.RawMessage, error) {
	if err := CheckTargetID(id); err != nil {
		return nil, err
	}
	var out current
	if err := fsm.Ask(ctx, s.r, QueryCurrent, c == fsm.Stale, targetQuery{TargetID: id}, &out); err != nil {
		return nil, err
	}
	if !json.Valid(out.Bytes) {
		return nil, errs.New(errs.CodeInternal, "stored publication is not JSON")
	}
	return json.RawMessage(out.Bytes), nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the service enables every projection command at the
// version this package sends.
func (s *Service) Require(ctx context.Context) error {
	return fsm.Require(ctx, s.r, fsm.ServedBy(Module()))
}
