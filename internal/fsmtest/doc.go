// Package fsmtest holds the repository's test helpers around an FSM
// without raft: state dumps and comparisons (state.go, stored.go),
// payload helpers, the answer pins of a corpus of commands (pin.go:
// Pin, which each domain's TestAnswersPinned runs), plus the names of the public in-process driver
// (fsm/fsmtest: Local, New, Epoch, AtVersion), so tests use one import.
package fsmtest
