package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Principal is the verified identity a command runs as. The leader stamps it
// from authentication or from the embedding host's context; a request body
// never supplies it.
type Principal struct {
	ID string `msgpack:"id"`
	// Tenants the principal may act for ("*": every tenant) and the roles
	// it holds (admin, controller, member, reader). An empty principal is
	// an embedding host acting for itself, which handlers trust.
	Tenants []string `msgpack:"tenants,omitempty"`
	Roles   []string `msgpack:"roles,omitempty"`
	// Cred names the credential that authenticated the principal on the
	// node that took the request (TokenCred, CertCred); empty for an
	// embedding host's principal. It never enters the log (a replica of
	// an older binary could not decode a command that held it): a
	// follower sends it beside the command or read it forwards, and the
	// leader holds it against the table it has applied before it
	// proposes the command or answers the read, so that a token rotated
	// away stops acting even through a node that has not yet applied the
	// rotation.
	Cred string `msgpack:"-"`
}

// A credential is named by its kind and the first credDigits hex digits
// of its SHA-256: 128 bits tell a principal's few credentials apart, and
// a token rotated away cannot pass for a new one it does not know.
const credDigits = 32

// TokenCred is the Cred of a bearer token whose HashToken is hash.
func TokenCred(hash string) string { return "token:" + hash[:min(len(hash), credDigits)] }

// CertCred is the Cred of a client certificate whose HashCert is hash.
func CertCred(hash string) string { return "cert:" + hash[:min(len(hash), credDigits)] }

// ValidCred reports whether cred has the form TokenCred and CertCred
// give it.
func ValidCred(cred string) bool {
	kind, digits, _ := strings.Cut(cred, ":")
	if kind != "token" && kind != "cert" || len(digits) != credDigits {
		return false
	}
	for _, c := range []byte(digits) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CredIn reports whether cred names one of the given token or certificate
// hashes (lower-case hex, as a Registry and the cluster's table keep them).
// It runs for every linearizable read that names a credential, so it
// compares in place rather than building each hash's Cred.
func CredIn(cred string, tokenSHA256, certSHA256 []string) bool {
	kind, digits, _ := strings.Cut(cred, ":")
	var hashes []string
	switch kind {
	case "token":
		hashes = tokenSHA256
	case "cert":
		hashes = certSHA256
	}
	if len(digits) != credDigits {
		return false
	}
	for _, h := range hashes {
		if len(h) >= credDigits && h[:credDigits] == digits {
			return true
		}
	}
	return false
}

// Role names.
const (
	RoleAdmin      = "admin"
	RoleController = "controller"
	RoleMember     = "member"
	RoleReader     = "reader"
)

// roleRank orders the roles: each includes the ones ranked below it.
var roleRank = map[string]int{RoleReader: 1, RoleMember: 2, RoleController: 3, RoleAdmin: 4}

// OwnerDigest is the owner digest bound to the principal's persistent id:
// an external caller may only act as the owner its principal derives.
func (p Principal) OwnerDigest() string {
	sum := sha256.Sum256([]byte("arbiter-owner\x00" + p.ID))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Trusted reports whether p is the empty principal of an embedding host.
func (p Principal) Trusted() bool { return p.ID == "" && len(p.Roles) == 0 && len(p.Tenants) == 0 }

// HasRole reports whether p may act in role: admin implies controller,
// controller implies member, member implies reader. The trusted empty
// principal holds every role.
func (p Principal) HasRole(role string) bool {
	if p.Trusted() {
		return true
	}
	for _, r := range p.Roles {
		if roleRank[r] >= roleRank[role] && roleRank[role] > 0 {
			return true
		}
	}
	return false
}

// InTenant reports whether p may act for tenant.
func (p Principal) InTenant(tenant string) bool {
	if p.Trusted() {
		return true
	}
	for _, t := range p.Tenants {
		if t == "*" || t == tenant {
			return true
		}
	}
	return false
}
