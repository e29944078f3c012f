package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/arbiterhq/arbiter/internal/canon"
)

// fingerprintPrefix starts every fingerprint: the version of the rule
// that computes it.
const fingerprintPrefix = "v1:"

// Rules says which rule of canonical JSON a fingerprint may follow.
// The record's canonical form was once Go's JSON escaping (U+2028 and
// U+2029 written as \u2028 and \u2029); it is now RFC 8785 (canon.JCS),
// the rule a client in any language follows. The two differ only for a
// string holding U+2028 or U+2029. A cluster accepts RFC 8785
// fingerprints once every member can (the enabled version of work-item
// submit, see package workitem), and records sealed under the old rule
// stay readable for ever.
type Rules uint8

const (
	// LegacyOnly accepts only the old rule: what a cluster decides until
	// every member serves the new one.
	LegacyOnly Rules = iota
	// RFC8785OrLegacy accepts a fingerprint under either rule.
	RFC8785OrLegacy
)

// fingerprint is "v1:" and the hex SHA-256 of the RFC 8785 canonical JSON
// of the record's fields without "fingerprint".
func fingerprint(fields object) (string, error) {
	return fingerprintWith(fields, canon.JCS)
}

// legacyFingerprint is fingerprint under the old rule (canon.JSON).
func legacyFingerprint(fields object) (string, error) {
	return fingerprintWith(fields, canon.JSON)
}

func fingerprintWith(fields object, canonical func([]byte) ([]byte, error)) (string, error) {
	rest := make(object, len(fields))
	for k, v := range fields { // order-free: copied into a map that json.Marshal sorts
		if k != "fingerprint" {
			rest[k] = v
		}
	}
	raw, err := json.Marshal(rest)
	if err != nil {
		return "", invalid("", "encode: %v", err)
	}
	c, err := canonical(raw)
	if err != nil {
		return "", invalid("", "%v", err)
	}
	sum := sha256.Sum256(c)
	return fingerprintPrefix + hex.EncodeToString(sum[:]), nil
}

// Fingerprint computes the fingerprint of a record given as JSON, whatever
// fingerprint it carries (or none), under RFC 8785.
func Fingerprint(raw []byte) (string, error) {
	fields, err := topFields(raw)
	if err != nil {
		return "", err
	}
	return fingerprint(fields)
}

// matchesFingerprint says whether the record's fingerprint is the one its
// fields give under rules, and returns the one they give (RFC 8785's, or
// the old rule's under LegacyOnly) for the error message.
func matchesFingerprint(fields object, have string, rules Rules) (bool, string, error) {
	legacy, err := legacyFingerprint(fields)
	if err != nil {
		return false, "", err
	}
	if rules == LegacyOnly {
		return have == legacy, legacy, nil
	}
	want, err := fingerprint(fields)
	if err != nil {
		return false, "", err
	}
	return have == want || have == legacy, want, nil
}

func canonical(raw []byte) ([]byte, error) {
	c, err := canon.JSON(raw)
	if err != nil {
		return nil, invalid("", "%v", err)
	}
	return c, nil
}

func validFingerprint(s string) bool {
	if len(s) != len(fingerprintPrefix)+64 || s[:len(fingerprintPrefix)] != fingerprintPrefix {
		return false
	}
	for _, c := range s[len(fingerprintPrefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
