// Package fsmtest runs an FSM without raft, for unit tests of service
// code and of modules, in this repository and in programs that embed
// Arbiter: commands are encoded, given the next index and a clock the
// test moves, and applied at once in the calling goroutine. Local
// implements fsm.Proposer and fsm.Reader, so a domain's service runs over
// it unchanged, and deterministically: the same calls give the same
// indexes, fences and times every run. It keeps the log it applied so a
// test can replay it elsewhere.
//
// A Local decides nothing across processes: it is never a stand-in for
// a cluster. Code that runs in production imports it only for a
// documented non-authoritative fixture (authority's
// FixtureConceptReservationAuthority).
package fsmtest
