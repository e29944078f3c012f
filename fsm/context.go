package fsm

import (
	"context"

	"github.com/arbiterhq/arbiter/log"
)

type principalKey struct{}

// WithPrincipal returns a context that carries p. An embedding host sets
// the principal its callers act as; the HTTP API sets the authenticated one.
func WithPrincipal(ctx context.Context, p log.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal on ctx, if any.
func PrincipalFrom(ctx context.Context) (log.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(log.Principal)
	return p, ok
}
