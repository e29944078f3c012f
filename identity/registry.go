package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/internal/bounds"
)

// PrincipalConfig is one principal as the deployment declares it.
type PrincipalConfig struct {
	ID      string   `json:"id"`
	Tenants []string `json:"tenants"`
	Roles   []string `json:"roles"`
	// TokenSHA256 are hex SHA-256 digests of bearer tokens (never the
	// tokens themselves).
	TokenSHA256 []string `json:"token_sha256,omitempty"`
	// CertSHA256 are hex SHA-256 digests of client certificates (DER).
	CertSHA256 []string `json:"cert_sha256,omitempty"`
}

// Registry resolves credentials. It is immutable; replace it to reload.
type Registry struct {
	byToken map[string]Principal
	byCert  map[string]Principal
	byCred  map[string]string // a credential's name (Principal.Cred) to its principal's id
	count   int
	table   bool // made from the cluster's principal table (AsTable)
}

// HashToken is the digest a registry stores for a bearer token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// HashCert is the digest a registry stores for a client certificate.
func HashCert(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

var knownRoles = []string{RoleAdmin, RoleController, RoleMember, RoleReader}

// NewRegistry validates principals: unique ids, known roles, at least one
// tenant and role each, well-formed and unshared digests.
func NewRegistry(principals []PrincipalConfig) (*Registry, error) {
	r := &Registry{byToken: map[string]Principal{}, byCert: map[string]Principal{}, byCred: map[string]string{}, count: len(principals)}
	ids := map[string]bool{}
	for _, pc := range principals {
		if err := bounds.Identifier("principal id", pc.ID); err != nil {
			return nil, fmt.Errorf("identity: %v", err)
		}
		if ids[pc.ID] {
			return nil, fmt.Errorf("identity: principal %q declared twice", pc.ID)
		}
		ids[pc.ID] = true
		if len(pc.Tenants) == 0 || len(pc.Roles) == 0 {
			return nil, fmt.Errorf("identity: principal %q needs at least one tenant and one role", pc.ID)
		}
		for _, t := range pc.Tenants {
			if err := bounds.Identifier("tenant", t); err != nil {
				return nil, fmt.Errorf("identity: principal %q: %v", pc.ID, err)
			}
		}
		for _, role := range pc.Roles {
			if !slices.Contains(knownRoles, role) {
				return nil, fmt.Errorf("identity: principal %q: unknown role %q (want one of %v)", pc.ID, role, knownRoles)
			}
		}
		if len(pc.TokenSHA256)+len(pc.CertSHA256) == 0 {
			return nil, fmt.Errorf("identity: principal %q has no credential", pc.ID)
		}
		p := Principal{ID: pc.ID, Tenants: slices.Clone(pc.Tenants), Roles: slices.Clone(pc.Roles)}
		for _, set := range []struct {
			name string
			list []string
			into map[string]Principal
			cred func(string) string
		}{{"token_sha256", pc.TokenSHA256, r.byToken, TokenCred}, {"cert_sha256", pc.CertSHA256, r.byCert, CertCred}} {
			for _, h := range set.list {
				h = strings.ToLower(h)
				if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
					return nil, fmt.Errorf("identity: principal %q: %s entries must be 64 hex digits", pc.ID, set.name)
				}
				if other, dup := set.into[h]; dup {
					return nil, fmt.Errorf("identity: principals %q and %q share a credential", other.ID, pc.ID)
				}
				q := p
				q.Cred = set.cred(h)
				set.into[h] = q
				r.byCred[q.Cred] = p.ID
			}
		}
	}
	return r, nil
}

// Load reads a principals file (see File: a JSON array of
// PrincipalConfig, or an object with a file_version) into a registry.
func Load(path string) (*Registry, error) {
	_, reg, err := LoadFile(path)
	return reg, err
}

// AsTable is r marked as made from the cluster's principal table (or the
// copy of it a node keeps), not from a node's own file: only then does a
// leader hold a credential a follower names against it (IsTable).
func (r *Registry) AsTable() *Registry {
	t := *r
	t.table = true
	return &t
}

// IsTable reports whether r was made from the cluster's table (AsTable).
func (r *Registry) IsTable() bool { return r.table }

// ByCred is the id of the principal that holds the credential cred names
// (Principal.Cred), if any. It allocates nothing: a leader asks it for
// every forwarded command.
func (r *Registry) ByCred(cred string) (id string, ok bool) {
	id, ok = r.byCred[cred]
	return id, ok
}

// Len is the number of principals.
func (r *Registry) Len() int { return r.count }

// ByToken resolves a bearer token to its principal, with the token's
// Cred. The lookup is by digest, so the time it takes says nothing about
// how close a wrong token came.
func (r *Registry) ByToken(token string) (Principal, bool) {
	p, ok := r.byToken[HashToken(token)]
	return clonePrincipal(p), ok
}

// ByCert resolves a client certificate (DER) to its principal, with the
// certificate's Cred.
func (r *Registry) ByCert(der []byte) (Principal, bool) {
	p, ok := r.byCert[HashCert(der)]
	return clonePrincipal(p), ok
}

// clonePrincipal keeps callers from changing the registry through the
// slices of a principal it returns.
func clonePrincipal(p Principal) Principal {
	p.Tenants, p.Roles = slices.Clone(p.Tenants), slices.Clone(p.Roles)
	return p
}
