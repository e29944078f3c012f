package fsm

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
)

// Response is the outcome of one applied command.
type Response struct {
	// Index is the log index that decided the result (for a replay, the
	// index of the original command).
	Index uint64 `msgpack:"i"`
	// Time is FSM time when the result was decided, unix ms.
	Time int64 `msgpack:"tm"`
	// Result is the handler's result, canonical msgpack; empty on error.
	Result []byte `msgpack:"r,omitempty"`
	// Err is the domain failure, if any. Nothing changed when it is set.
	Err *errs.Error `msgpack:"e,omitempty"`
	// Replayed is true when the idempotency ledger answered.
	Replayed bool `msgpack:"rp,omitempty"`
}

// Proposer submits commands to the replicated log. The returned error is
// about getting the command decided (unavailable, outcome unknown, refused);
// a decided command's domain failure is in Response.Err.
type Proposer interface {
	Propose(ctx context.Context, cmd log.Command) (*Response, error)
}

// Consistency selects how a read is served.
type Consistency int

const (
	// Linearizable reads reflect every write acknowledged before the read
	// began; the leader confirms its leadership first.
	Linearizable Consistency = iota
	// Stale reads are answered from the local replica, which may be behind.
	Stale
)

// Query is one read request.
type Query struct {
	Type    QueryType `msgpack:"t"`
	Payload []byte    `msgpack:"d"`
	// Stale allows the node to answer from its local state without
	// confirming leadership; it may be behind.
	Stale bool `msgpack:"s,omitempty"`
	// Adapter: see log.Command.Adapter.
	Adapter string `msgpack:"a,omitempty"`
}

// Reader answers queries; the result is canonical msgpack.
type Reader interface {
	Query(ctx context.Context, q Query) ([]byte, error)
}

// Submit proposes a command built from payload and decodes the result into
// out (a pointer to a zero value: a log.DirectDecoder decodes itself),
// turning a domain failure into the returned error.
func Submit(ctx context.Context, p Proposer, cmd log.Command, payload, out any) (*Response, error) {
	body, err := log.Marshal(payload)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode request: %v", err)
	}
	cmd.Payload = body
	if cmd.Version == 0 {
		cmd.Version = 1
	}
	res, err := p.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return res, res.Err
	}
	if out != nil {
		if d, ok := out.(log.DirectDecoder); ok && d.DecodeDirect(res.Result) {
			return res, nil
		}
		if err := log.Unmarshal(res.Result, out); err != nil {
			return res, errs.Errorf(errs.CodeInternal, "decode result: %v", err)
		}
	}
	return res, nil
}

// Ask runs a query built from payload and decodes the result into out.
func Ask(ctx context.Context, r Reader, t QueryType, stale bool, payload, out any) error {
	body, err := log.Marshal(payload)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "encode query: %v", err)
	}
	b, err := r.Query(ctx, Query{Type: t, Payload: body, Stale: stale})
	if err != nil {
		return err
	}
	if err := log.Unmarshal(b, out); err != nil {
		return errs.Errorf(errs.CodeInternal, "decode query result: %v", err)
	}
	return nil
}

// decodePayload is what every handler calls first: strict decoding whose
// failure is an invalid-command error, never a panic.
func decodePayload(b []byte, v any) error {
	if err := log.Unmarshal(b, v); err != nil {
		return errs.Errorf(errs.CodeInvalid, "payload: %v", err)
	}
	return nil
}

// DecodePayload is decodePayload for modules in other packages.
func DecodePayload(b []byte, v any) error { return decodePayload(b, v) }
