package fsm

import (
	"context"

	"github.com/arbiterhq/arbiter/identity"
)

type principalKey struct{}

// WithPrincipal returns a context that carries p. An embedding host sets
// the principal its callers act as; the HTTP API sets the authenticated one.
func WithPrincipal(ctx context.Context, p identity.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal on ctx, if any.
func PrincipalFrom(ctx context.Context) (identity.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(identity.Principal)
	return p, ok
}
