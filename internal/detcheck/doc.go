// Package detcheck holds a test that keeps Apply deterministic by
// construction: in the packages that hold FSM handlers and queries, every
// range over a Go map must either be one of the shapes whose result does
// not depend on the iteration order (collecting into a slice that is
// sorted right after, copying into another map), or carry a comment
// "order-free: <why>" on its line or the line above. A new map range that
// may let Go's random order reach state or a response fails CI instead of
// depending on review.
//
// The packages are found, not listed (discover_test.go): every package of
// the module whose non-test files register commands (name fsm.CommandSpec
// or build an fsm.Module with Commands), the packages beneath them (a
// domain's own sub-packages), fsm and internal/statestore. A new domain is
// linted from its first command on.
package detcheck
