package cluster

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// caller is who sent a request.
type caller struct {
	principal identity.Principal
	peer      bool   // another node of this cluster
	via       string // the credential that identified it (Whoami.Credential)
}

// Credentials a caller is identified by (Whoami.Credential).
const (
	viaNone        = "none" // open mode: every caller is trusted
	viaPeer        = "peer" // another node: peer certificate or peer token
	viaToken       = "bearer_token"
	viaCertificate = "client_certificate"
)

// AuthMode says how a node authenticates callers.
func (n *Node) AuthMode() string { return n.api.authMode() }

func (hs *httpAPI) authMode() string {
	if hs.principals.Load() == nil {
		return "open"
	}
	return "principals"
}

// SetPrincipals replaces the principal registry while the node runs (nil
// is refused: a node started with authentication keeps it).
func (n *Node) SetPrincipals(r *identity.Registry) error { return n.api.setPrincipals(r) }

func (hs *httpAPI) setPrincipals(r *identity.Registry) error {
	if r == nil {
		return errs.New(errs.CodeInvalid, "a node with authentication cannot be switched to open mode")
	}
	if hs.principals.Load() == nil {
		return errs.New(errs.CodeInvalid, "a node started in open mode cannot be switched to authentication")
	}
	hs.principals.Store(r)
	hs.logger.Info("principals reloaded", "count", r.Len())
	return nil
}

// authenticate identifies the caller of r. In open mode every caller is
// the trusted empty principal. Otherwise a node proves itself with a
// certificate from the peer CAs (or the shared peer token), and a
// principal with a bearer token or a client certificate; anything else is
// unauthorized. The credential never comes from the request body.
func (hs *httpAPI) authenticate(r *http.Request) (caller, error) {
	peer := hs.isPeer(r)
	reg := hs.principals.Load()
	if reg == nil {
		// Open development mode: bound to loopback (Validate enforces
		// it); with TLS, only nodes are peers.
		c := caller{peer: peer || hs.cfg.TLS == nil, via: viaNone}
		if peer {
			c.via = viaPeer
		}
		return c, nil
	}
	if peer {
		return caller{peer: true, via: viaPeer}, nil
	}
	if token, ok := bearer(r); ok {
		if p, ok := reg.ByToken(token); ok {
			return caller{principal: p, via: viaToken}, nil
		}
		return caller{}, errs.New(errs.CodeUnauthorized, "unknown bearer token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		if p, ok := reg.ByCert(r.TLS.PeerCertificates[0].Raw); ok {
			return caller{principal: p, via: viaCertificate}, nil
		}
		return caller{}, errs.New(errs.CodeUnauthorized, "client certificate names no principal")
	}
	return caller{}, errs.New(errs.CodeUnauthorized, "no credential: send Authorization: Bearer <token> or a client certificate")
}

// isPeer reports whether r comes from another node: a TLS client
// certificate from the peer CAs, or the shared peer token.
func (hs *httpAPI) isPeer(r *http.Request) bool {
	if hs.cfg.TLS != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && hs.cfg.TLS.VerifyPeer(r.TLS.PeerCertificates) == nil {
		return true
	}
	if hs.cfg.PeerToken == "" {
		return false
	}
	token, ok := bearer(r)
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(hs.cfg.PeerToken)) == 1
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authorizeRoute applies a route's access level to its caller.
func authorizeRoute(a domain.Access, c caller) error {
	switch a {
	case domain.Peer:
		if !c.peer {
			return errs.New(errs.CodeForbidden, "this endpoint is for the cluster's nodes only")
		}
	case domain.Admin:
		if !c.peer && !c.principal.HasRole(identity.RoleAdmin) {
			return errs.New(errs.CodeForbidden, "this endpoint needs the admin role")
		}
	}
	return nil
}

// bearerTransport adds a bearer token to every request: the peer token on
// a node's requests to other nodes, a principal's token on a client's.
type bearerTransport struct {
	base  http.RoundTripper
	token string
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}
