package client

import (
	"context"
	"net/http"
)

// Principals is the cluster's access control (/v1/principals): the
// replicated table of principals, their tenants, roles and credential
// hashes, which every node enforces as soon as it applies a change.
// Every method needs an admin; a change needs an admin of every tenant.
//
// Only hashes travel: a token is made by the caller (NewToken, `arbiter
// principal add`), kept by it, and its TokenHash is sent.
type Principals struct{ c *Client }

// Principals is the principals service.
func (c *Client) Principals() *Principals { return &Principals{c} }

// PrincipalRequest is the JSON form of access.PutRequest.
type PrincipalRequest struct {
	ID          string   `json:"id"`
	Tenants     []string `json:"tenants"`
	Roles       []string `json:"roles"`
	TokenSHA256 []string `json:"token_sha256,omitempty"`
	CertSHA256  []string `json:"cert_sha256,omitempty"`
	Replace     bool     `json:"replace,omitempty"`
}

// RotateRequest is the JSON body of access.RotateRequest (the id is in
// the path).
type RotateRequest struct {
	TokenSHA256 []string `json:"token_sha256"`
}

// PrincipalInfo is the JSON form of access.PrincipalInfo: credentials
// as fingerprints only ("sha256:" and 8 hex digits).
type PrincipalInfo struct {
	ID       string   `json:"id"`
	Tenants  []string `json:"tenants"`
	Roles    []string `json:"roles"`
	Tokens   []string `json:"tokens"`
	Certs    []string `json:"certs"`
	Source   string   `json:"source"`
	SetIndex uint64   `json:"set_index"`
	SetAtMs  int64    `json:"set_at_ms"`
}

// PrincipalList is the JSON form of access.ListResult.
type PrincipalList struct {
	Configured  bool            `json:"configured"`
	Source      string          `json:"source,omitempty"`
	FileVersion uint64          `json:"file_version"`
	Index       uint64          `json:"index"`
	Digest      string          `json:"digest,omitempty"`
	Principals  []PrincipalInfo `json:"principals"`
}

// PrincipalChange is the JSON form of access.ChangeResult: every node
// enforces the change once it has applied Index.
type PrincipalChange struct {
	Principal PrincipalInfo `json:"principal"`
	Created   bool          `json:"created,omitempty"`
	Removed   bool          `json:"removed,omitempty"`
	Index     uint64        `json:"index"`
	Count     int           `json:"count"`
	Digest    string        `json:"digest"`
}

// List returns the table (without hashes).
func (s *Principals) List(ctx context.Context, cons Consistency) (*PrincipalList, error) {
	return do[PrincipalList](ctx, s.c, get("/v1/principals", params("consistency", string(cons))))
}

// Add adds a principal (201), or replaces one with Replace (200). An id
// that exists without Replace is errs.Conflict.
func (s *Principals) Add(ctx context.Context, req PrincipalRequest) (*PrincipalChange, error) {
	return do[PrincipalChange](ctx, s.c, call{method: http.MethodPost, path: "/v1/principals", body: req, write: true, repeatable: req.Replace})
}

// Remove removes a principal; an unknown one is errs.NotFound.
func (s *Principals) Remove(ctx context.Context, id string) (*PrincipalChange, error) {
	return do[PrincipalChange](ctx, s.c, repeat(http.MethodDelete, pathOf("principals", id), nil))
}

// Rotate replaces a principal's token hashes.
func (s *Principals) Rotate(ctx context.Context, id string, tokenSHA256 ...string) (*PrincipalChange, error) {
	return do[PrincipalChange](ctx, s.c, repeat(http.MethodPost, pathOf("principals", id, "rotate"), RotateRequest{TokenSHA256: tokenSHA256}))
}
