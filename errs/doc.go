// Package errs holds Arbiter's one closed set of error codes: the shared
// codes every module and the host use, defined here, plus the decision
// codes a domain's spec names, which the domain registers itself
// (Register, MustRegister in a package-level var of the domain package)
// with the HTTP status they answer. A code is known (Known) once it is
// shared or registered; a decoder turns any other code into Internal.
//
// Every failure that crosses a package edge, a node boundary or the HTTP API
// is an *Error carrying one Code. Codes travel on the wire, so an error that
// came back from a remote node still matches its sentinel:
//
//	if errors.Is(err, errs.Conflict) { ... }
//
// The mapping from code to HTTP status lives in Status and nowhere else:
// the shared codes' statuses here, a domain code's as it was registered.
package errs
