package domain

import "context"

// Conn is a raw connection to a cluster's HTTP API (internal/rawremote
// is one; embedders use package client). As a Backend it proposes and
// reads as the principal its credentials name.
type Conn interface {
	Backend
	// CallJSON sends body as JSON (nil: no body) with method to path,
	// trying the nodes in turn while one cannot be reached, and decodes
	// a 2xx answer into out (nil: ignored). An error answer becomes its
	// *errs.Error.
	CallJSON(ctx context.Context, method, path string, body, out any) error
}
