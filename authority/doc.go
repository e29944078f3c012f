// Package authority is the concept reservation authority of
// concept-reservation-authority.txt, built only on the generic node
// primitives of package nodes: CreateNodeIfAbsent, CompareAndSetNodeFields,
// GetNodeProperties and GetNodesByLabel. The replicated cluster is the
// "authoritative graph"; Service is the adapter the spec describes, and
// Domain serves it over HTTP (the /v1/concepts routes, as an in-server
// adapter of the node primitives) with the --concept-policies flag. Client
// is the same API over a cluster's HTTP routes, for programs that do not
// embed a node; `arbiter concept` (cmd/arbiter) speaks it through package
// client and projects into a repository with ConceptReservationService.
//
// Namespace policies (policy.go) say which numbers of a namespace, or of
// a semantic prefix declared inside it (RMDD-SEARCH-<n>), the authority
// hands out; overlapping ranges of one scope are refused. The policy set
// is replicated configuration, one for the cluster (policyset.go): the
// authority's module (module.go, types 100-199) holds it, and writes a
// claim with concept_reserve / concept_reclaim, which carry the node
// create or CAS and bind the record's policy fields inside Apply from the
// set as of that entry, so every replica decides alike. A node's
// --concept-policies file only seeds the set (when the cluster has none,
// or the file's version is newer); admins replace it with PUT
// /v1/concepts/policies. Where the cluster does not enable the module yet
// (a rolling upgrade part-way), the service binds policies itself from
// the set it was given, as older releases did.
//
// One node per complete concept id (NAMESPACE-NUMBER, e.g. RMDD-27, or
// NAMESPACE-PREFIX-NUMBER) with identity "concept-reservation:<concept_id>"
// holds the durable record. The
// first create wins. A failed create is classified by reading the node: the
// same request key and fingerprint (every input of the request, ttl_ms
// included, in fingerprint version 2; a claim keeps the version it was
// written with) replay the winner; a released or expired
// claim that was never repository-visible is reclaimed by one CAS over its
// reservation id, fingerprint, state and fence; anything else conflicts.
// Lifecycle transitions are one CAS conditioned on tenant, owner,
// reservation id, fingerprint, state and the caller's fence, and give the
// claim a new fence: the log index of the write once the cluster enables
// set_index, so fences never repeat, also across a restored backup
// (counted up by one before that; see fence.go):
//
//	reserved -> materialized -> landed -> tombstoned
//	     |             |           |
//	     +-> released  +-> released +-> tombstoned
//	     +-> expired   +-> expired
//
// Visibility (none < repository < external) never decreases: landed is
// repository-visible, tombstoned externally visible, and a release or
// expiry after repository visibility becomes a tombstone. Expiry is decided
// by FSM time (the node primitives' due/not_due conditions), never by a
// caller's clock. Nodes are never deleted.
//
// There is no local fallback: when the cluster cannot answer, calls fail
// with an error matching ErrAuthorityUnavailable and callers defer and
// retry. FixtureConceptReservationAuthority runs the same protocol on an
// in-process state machine for unit tests; it is not authoritative.
//
// ConceptReservationService adds the local projection (repoview.go): Materialize performs
// the fenced transition, then appends a privacy-safe record to the caller's
// own fragment file and regenerates the view; ReconcileProjection compares
// the native records of a tenant with the fragments, the view and source
// markers, read-only and bounded.
package authority
