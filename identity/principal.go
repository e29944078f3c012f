package identity

import (
	"crypto/sha256"
	"encoding/hex"
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
