// Package fsmtest runs an FSM without raft: commands are encoded, given the
// next index and a controllable clock, and applied directly. It implements
// fsm.Proposer and fsm.Reader, so service code runs against it unchanged,
// and it keeps the log it applied so tests can replay it elsewhere.
package fsmtest
