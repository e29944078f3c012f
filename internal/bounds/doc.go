// Package bounds holds the shared shape checks for opaque identifiers and
// the limits every module applies to them, so that "a valid id" means the
// same thing at the HTTP edge, in a service and inside Apply.
package bounds
