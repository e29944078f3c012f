// Package builtin is the one place that lists the domains an arbiter
// binary serves. cmd/arbiter, the examples and the test harnesses build
// their nodes from it; a host program embedding a node may use it or
// list domains of its own. Adding a domain is one line here.
package builtin
