// Package extension is the resource_reservation record a work item
// carries in metadata.resource_reservation (workitem-resource-
// reservation.txt, issue 13): its Go type, its closed-schema parser and
// its v1 fingerprint. It is pure (no state, no time, no I/O), so the
// same code checks a request in a client, in the service before it
// proposes, and inside Apply at submit and again before every reserve.
//
// # Closed schema
//
// schema_version must be "1" (an absent, other or future version is
// refused before anything else is read). Every field but branch and
// base_ref must be present, none may be null, and no other field may
// appear, at any level. Integers are JSON integers within the bounds
// below; booleans are JSON booleans.
//
// # Identifiers
//
// Every string (profile name and version, concurrency key, repository,
// branch, base_ref, fairness group, host label keys and values,
// anti-affinity keys, target policies) is an opaque identifier: 1 to
// MaxIdentifierBytes bytes of UTF-8 without control characters. Since
// credentials, paths, command bodies and raw payloads must never enter
// the record, a value that starts like an absolute path ("/", "\",
// "C:\" or "C:/"), a home path ("~"), or is a URL whose authority holds
// user information ("https://token@host/...") is refused.
//
// # Fingerprint
//
// fingerprint is "v1:" and the lowercase hex SHA-256 of the RFC 8785
// canonical JSON (canon.JCS; docs/canonical-json.md states the rule and
// its test vectors) of the record without its fingerprint field. Seal
// computes it for a client; Parse recomputes it and refuses a mismatch
// with detail.reason "fingerprint_mismatch". Records sealed under the
// older rule (Go's escaping of U+2028 and U+2029) stay accepted; inside
// Apply, ParseUnder takes the rules the cluster has enabled (see Rules).
//
// # Branch identity
//
// exclusivity.branch true requires an explicit branch. Otherwise the
// branch identity is branch when given, else base_ref (legacy
// non-exclusive work), else none; base_ref stays as given.
package extension
