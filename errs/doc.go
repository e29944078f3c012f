// Package errs holds Arbiter's one closed set of error codes.
//
// Every failure that crosses a package edge, a node boundary or the HTTP API
// is an *Error carrying one Code. Codes travel on the wire, so an error that
// came back from a remote node still matches its sentinel:
//
//	if errors.Is(err, errs.Conflict) { ... }
//
// The mapping from code to HTTP status lives in Status and nowhere else.
package errs
