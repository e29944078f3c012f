package access

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// Service manages the principal table through a Proposer and a Reader
// (a node, a remote cluster, a bare FSM). Requests are checked here
// first, and again inside Apply.
type Service struct {
	p fsm.Proposer
	r fsm.Reader
}

// NewService returns a service over p and r.
func NewService(p fsm.Proposer, r fsm.Reader) *Service { return &Service{p: p, r: r} }

// check validates one principal as a table would hold it.
func check(pc identity.PrincipalConfig) (identity.PrincipalConfig, error) {
	n, err := normalize(pc)
	if err != nil {
		return pc, err
	}
	if _, err := validate([]identity.PrincipalConfig{n}); err != nil {
		return pc, err
	}
	return n, nil
}

// Put adds a principal (admins of every tenant), or replaces it with
// Replace. Its credentials count on every node once that node applies
// the answer's Index.
func (s *Service) Put(ctx context.Context, req PutRequest) (*ChangeResult, error) {
	pc, err := check(identity.PrincipalConfig{ID: req.ID, Tenants: req.Tenants, Roles: req.Roles, TokenSHA256: req.TokenSHA256, CertSHA256: req.CertSHA256})
	if err != nil {
		return nil, err
	}
	return s.change(ctx, CmdPut, putCmd{Principal: pc, Replace: req.Replace})
}

// Remove removes a principal: every node refuses its credentials once it
// applies the answer's Index.
func (s *Service) Remove(ctx context.Context, id string) (*ChangeResult, error) {
	if _, err := check(identity.PrincipalConfig{ID: id, Tenants: []string{"*"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("")}}); err != nil {
		return nil, err
	}
	return s.change(ctx, CmdRemove, removeCmd{ID: id})
}

// Rotate replaces a principal's token hashes; the old tokens are refused
// on every node once it applies the answer's Index.
func (s *Service) Rotate(ctx context.Context, req RotateRequest) (*ChangeResult, error) {
	if len(req.TokenSHA256) == 0 {
		return nil, errs.New(errs.CodeInvalid, "a rotation needs the new token's token_sha256")
	}
	pc, err := check(identity.PrincipalConfig{ID: req.ID, Tenants: []string{"*"}, Roles: []string{identity.RoleReader}, TokenSHA256: req.TokenSHA256})
	if err != nil {
		return nil, err
	}
	return s.change(ctx, CmdRotate, rotateCmd{ID: req.ID, TokenSHA256: pc.TokenSHA256})
}

func (s *Service) change(ctx context.Context, t log.Type, payload any) (*ChangeResult, error) {
	var out ChangeResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: t, Version: 1}, payload, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List reads the table (admins), without hashes.
func (s *Service) List(ctx context.Context, c fsm.Consistency) (*ListResult, error) {
	var out ListResult
	if err := fsm.Ask(ctx, s.r, QueryList, c == fsm.Stale, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Seed proposes a principals file as the table: the cluster takes it
// only when it holds none yet or f.FileVersion is above every file
// version it took (else the answer is the table, not Applied).
func (s *Service) Seed(ctx context.Context, f *identity.File) (*SeedResult, error) {
	if f == nil {
		return nil, errs.New(errs.CodeInvalid, "no principals file to seed")
	}
	list := f.Principals
	if list == nil {
		list = []identity.PrincipalConfig{}
	}
	var out SeedResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdSeed, Version: 1}, seedCmd{FileVersion: f.FileVersion, Principals: list}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
