package projection

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Service is the typed Go API of projections over any Proposer and
// Reader: a cluster node, a remote cluster (a domain.Conn) or a bare
// FSM in tests. Requests are checked here first (a bad one is never
// proposed) and again by the FSM. The caller's identity is the principal
// on the context (none: a trusted embedding host).
type Service struct {
	p      fsm.Proposer
	r      fsm.Reader
	random io.Reader
	// rootError, set on the service of a node's routes, says why the
	// node's runtime root cannot be written now (writer.rootError).
	rootError func() error
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
//
// No success without the file. The answer says what the node that served
// it did with its own current.json (PublishResult.File): on a cluster
// node (a backend that runs effects, fsm.EffectReporter) the service
// waits, at most fileWait, for the node to have applied the publication
// and run its write, and reports the outcome the FSM kept for the
// target's file (a keyed effect, see fileKeyPrefix). Before it proposes,
// a node that knows its root is broken (the root is gone, or a write of
// its has failed and not yet succeeded on retry) refuses with
// unavailable: the lease is not consumed, and the holder may publish
// through another node. Over a remote cluster (a domain.Conn such as
// internal/rawremote) the service asks a node's POST /v1/projection/publish,
// so that the answer is that node's.
func (s *Service) Publish(ctx context.Context, req FenceRequest) (*PublishResult, error) {
	cmd, err := fence(req)
	if err != nil {
		return nil, err
	}
	node, local := s.p.(fsm.EffectReporter)
	if conn, ok := s.p.(domain.Conn); ok && !local {
		var out PublishResult
		if err := conn.CallJSON(ctx, http.MethodPost, "/v1/projection/publish", req, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	if local {
		if err := s.writable(node); err != nil {
			return nil, err
		}
	}
	var out PublishResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdPublish}, cmd, &out); err != nil {
		return nil, err
	}
	if local {
		s.fileOutcome(ctx, node, &out)
	}
	return &out, nil
}

// fileWait bounds how long a publish answer waits for the serving node
// to have written its file: a follower applies the publication a round
// trip after the leader, and a write waits at most lockWait for its root.
const fileWait = 5 * time.Second

// writable refuses a publish on a node that knows it cannot write its
// file: its root is gone, or a write has failed and not yet succeeded.
func (s *Service) writable(node fsm.EffectReporter) error {
	if s.rootError != nil {
		if err := s.rootError(); err != nil {
			return errs.Errorf(errs.CodeUnavailable, "this node cannot write projection files: %v; nothing was published and the lease is still held (publish through another node, or restore the root)", err)
		}
	}
	if failing := node.FailingEffects(fileKeyPrefix); len(failing) > 0 {
		f := failing[0]
		e := errs.Errorf(errs.CodeUnavailable, "this node's projection writes are failing (%d; %s at index %d: %s) and are being retried; nothing was published and the lease is still held (publish through another node, or fix the runtime root)",
			len(failing), strings.TrimPrefix(f.Key, fileKeyPrefix), f.Index, f.Error)
		e.Detail = map[string]any{"failing_writes": len(failing)}
		return e
	}
	return nil
}

// fileOutcome sets out.File to what the serving node did with the
// publication's file.
func (s *Service) fileOutcome(ctx context.Context, node fsm.EffectReporter, out *PublishResult) {
	ctx, cancel := context.WithTimeout(ctx, fileWait)
	defer cancel()
	st, err := node.EffectState(ctx, fileKey(out.TargetID), out.PublicationSeq)
	switch {
	case err != nil:
		out.File, out.FileError = FilePending, err.Error()
	case st == nil:
		out.File = FileNone
	case st.Error != "":
		out.File, out.FileError = FileFailed, st.Error
	default:
		out.File = FileWritten
	}
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
