// Package fsmtest holds the repository's test helpers around an FSM
// without raft: state dumps and comparisons (state.go, stored.go) and
// payload helpers, plus the names of the public in-process driver
// (fsm/fsmtest: Local, New, Epoch, AtVersion), so tests use one import.
package fsmtest
