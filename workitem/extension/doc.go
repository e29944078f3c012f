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
// anti-affinity keys, target policies) is an identifier: 1 to
// MaxIdentifierBytes bytes of UTF-8 without control characters.
// Credentials, paths, command bodies and raw payloads must never enter
// the record, so an identifier is refused (detail.class names the
// class) when it is, checked in this order:
//
//   - shell-like (ClassShell): it contains a space (Unicode category
//     Zs: U+0020, a no-break space and the like; tabs and line breaks
//     are control characters, refused by every version), or any of
//     ; & | ` $ < > ( ) ' " (separators, pipes, substitution,
//     redirection, quoting);
//   - a URL (ClassURL): it contains "://" (a URL with an authority,
//     whatever the scheme: https://x, file:///etc/passwd,
//     git+ssh://host/repo), starts with "file:" or "data:" (either
//     case), or is an scp-style remote "user@host:path";
//   - path-like (ClassPath): it starts with "/", "\", "~" or a drive
//     ("C:\", "C:/"), contains a backslash, or has a "/"-separated
//     segment that is empty, "." or ".." (a leading, doubled or trailing
//     slash, a step in place or up);
//   - token-like (ClassToken): a known credential prefix (ghp_, gho_,
//     ghu_, ghs_, ghr_, github_pat_, glpat-, xoxa-, xoxb-, xoxp-, xoxr-,
//     xoxs-, sk-, sk_live_, sk_test_, rk_live_) at the start or after a
//     character that is not [A-Za-z0-9_-], followed by at least 16 such
//     characters; an AWS access key id (AKIA or ASIA and 16 uppercase
//     letters or digits); a JSON Web Token (three dot-separated base64url
//     parts, the first starting "eyJ"); "-----BEGIN" (a PEM block); or
//     password=, passwd=, secret=, token=, api_key=, apikey= or
//     access_key= (either case).
//
// A repository "org/repo" or a branch "feature/x" is a relative name of
// plain segments: it names nothing outside wherever its reader roots
// it, and stays accepted. "../../etc" is a path because it steps out of
// that root, "/etc" because it names one of its own. A relative name
// such as "etc/passwd" cannot be told from a repository and is
// accepted; so is a random string without a credential's mark.
//
// These are the rules of IdentifiersV2 (CurrentIdentifiers: Parse, Seal,
// Identifier). IdentifiersV1 (ParseWith) refused only absolute and home
// paths and URLs with user information; Apply reads a record under the
// rules of the command version the cluster enables, so a log admitted
// under IdentifiersV1 replays as it was applied.
//
// # Fingerprint
//
// fingerprint is "v1:" and the lowercase hex SHA-256 of the RFC 8785
// canonical JSON (canon.JCS; docs/canonical-json.md states the rule and
// its test vectors) of the record without its fingerprint field. Seal
// computes it for a client; Parse recomputes it and refuses a mismatch
// with detail.reason "fingerprint_mismatch". Records sealed under the
// older rule (Go's escaping of U+2028 and U+2029) stay accepted; inside
// Apply, ParseWith takes the rules the cluster has enabled (see Rules).
// A record already in canonical form without U+2028 or U+2029 (canon.Plain:
// what Seal makes and metadata stores) has one canonical form under both
// rules, so its fingerprint is read off its bytes and it is decoded without
// reflection; any other record is put in canonical form in full. The
// answer is the same either way.
//
// # Branch identity
//
// exclusivity.branch true requires an explicit branch. Otherwise the
// branch identity is branch when given, else base_ref (legacy
// non-exclusive work), else none; base_ref stays as given.
package extension
