// Package canon turns JSON-compatible values into one canonical byte form so
// that equal values compare equal byte for byte, on every replica.
//
// The canonical form is compact JSON with object keys sorted by their UTF-8
// bytes, strings escaped minimally, and numbers normalized exactly (no
// floating point is ever involved): 1, 1.0 and 10e-1 all become 1; 0.50
// becomes 0.5; 1e30 becomes 1e+30. Nesting depth, number size and total size
// are bounded so that a hostile value cannot exhaust memory or stack.
//
// Plain tells in one read, without allocating, that a value is already in
// both canonical forms (JSON and JCS): a plain subset that stored canonical
// values almost always belong to. PlainMembers and PlainElements read such
// an object or array as encoding/json would, without reflection. Anything
// outside the subset is left to the full checks.
package canon
