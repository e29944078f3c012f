package authority

import (
	"context"
	"errors"

	"github.com/arbiterhq/arbiter/errs"
)

// MaxCandidates bounds the numbers one ReserveNextNumeric call may probe.
const MaxCandidates = 128

// ReserveNextRequest asks for the first free number of an explicit range.
// Request carries every field of a reservation but the concept id.
type ReserveNextRequest struct {
	Namespace string `json:"namespace"`
	// Prefix, if set, probes NAMESPACE-PREFIX-<n> ids (a semantic prefix
	// a policy declares).
	Prefix string `json:"prefix,omitempty"`
	// From and To are the first and last candidate numbers, inclusive; at
	// most MaxCandidates of them, all inside one policy's range.
	From    uint64         `json:"from"`
	To      uint64         `json:"to"`
	Request ReserveRequest `json:"request"`
}

// ReserveNextNumeric tries the candidates From..To in order, each through
// the same create-once path as Reserve, and returns the first that is
// this request's: created, reclaimed, or a replay of this same request
// (in whatever state that claim is now, as for Reserve). Candidates held
// by others are skipped; independent ranges share no lock.
func (s *Service) ReserveNextNumeric(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
	return reserveNext(ctx, s, req)
}

func reserveNext(ctx context.Context, a Authority, req ReserveNextRequest) (*ReserveResult, error) {
	if !validNamespace(req.Namespace) {
		return nil, errs.Errorf(errs.CodeInvalid, "namespace %q is not upper-case A-Z0-9 starting with a letter", req.Namespace)
	}
	if req.Prefix != "" && !validPrefix(req.Prefix) {
		return nil, errs.Errorf(errs.CodeInvalid, "prefix %q is not upper-case segments (A-Z then A-Z0-9) joined by hyphens, at most %d characters", req.Prefix, MaxPrefixLen)
	}
	if req.From < 1 || req.To < req.From || req.To-req.From >= MaxCandidates {
		return nil, errs.Errorf(errs.CodeInvalid, "candidate range %d..%d must start at 1 or more and hold at most %d numbers", req.From, req.To, MaxCandidates)
	}
	if req.Request.ConceptID != "" {
		return nil, errs.New(errs.CodeInvalid, "request.concept_id is chosen by reserve-next; leave it empty")
	}
	var last error
	for n := req.From; n <= req.To; n++ {
		r := req.Request
		r.ConceptID = ConceptID{Namespace: req.Namespace, Prefix: req.Prefix, Number: n}.String()
		res, err := a.Reserve(ctx, r)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, errs.Conflict) {
			return nil, err
		}
		last = err
	}
	scope := scopeOf(req.Namespace, req.Prefix)
	e := errs.Errorf(errs.CodeExhausted, "every candidate %s-%d..%s-%d is held (last: %v)", scope, req.From, scope, req.To, last)
	return nil, e
}
