package cluster

import (
	"net/http"
	"slices"

	"github.com/arbiterhq/arbiter/domain"
)

// Whoami is who a node takes the caller of GET /v1/auth/whoami to be: the
// principal its credential names, what it may do, and the owner digest
// the node derives for it (what capacity's owner_digest and an empty
// owner_ref become).
type Whoami struct {
	// AuthMode is "open" or "principals" (Status.AuthMode).
	AuthMode string `json:"auth_mode"`
	// Credential is what identified the caller: "bearer_token",
	// "client_certificate", "peer" (another node of the cluster), or
	// "none" (open mode, where every caller is trusted).
	Credential string   `json:"credential"`
	Principal  string   `json:"principal"`
	Tenants    []string `json:"tenants"`
	Roles      []string `json:"roles"`
	// OwnerDigest is the owner digest bound to the principal; "" for a
	// trusted caller, which names owners itself.
	OwnerDigest string `json:"owner_digest"`
	// Trusted callers (open mode, other nodes) act as the embedding host:
	// every tenant and role, owners and tenants taken as given.
	Trusted bool `json:"trusted"`
}

func (hs *httpAPI) handleWhoami(w http.ResponseWriter, r *http.Request) {
	if _, err := domain.ParseParams(r); err != nil {
		domain.WriteError(w, err)
		return
	}
	// instrument authenticated the request already and put only the
	// principal on its context (a second context value would cost every
	// request two allocations); asking again gives the credential too.
	c, err := hs.authenticate(r)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	domain.WriteJSON(w, http.StatusOK, whoami(hs.authMode(), c))
}

func whoami(mode string, c caller) Whoami {
	p := c.principal
	out := Whoami{AuthMode: mode, Credential: c.via, Principal: p.ID,
		Tenants: slices.Clone(p.Tenants), Roles: slices.Clone(p.Roles)}
	if out.Credential == "" {
		out.Credential = viaNone
	}
	if p.Trusted() {
		out.Trusted = true
		out.Tenants, out.Roles = []string{"*"}, []string{"admin"}
		return out
	}
	if out.Tenants == nil {
		out.Tenants = []string{}
	}
	if out.Roles == nil {
		out.Roles = []string{}
	}
	out.OwnerDigest = p.OwnerDigest()
	return out
}
