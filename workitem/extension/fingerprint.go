package extension

import (
	"bytes"
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
//
// raw is the record fields were decoded from: when canon.Plain accepts
// it (a record sealed by Seal, or stored in canonical form, is such a
// record unless a string holds U+2028 or U+2029) both rules give the
// same fingerprint, read off its bytes (plainFingerprint).
func matchesFingerprint(raw []byte, fields object, have string, rules Rules) (bool, string, error) {
	if want, ok := plainFingerprint(raw); ok {
		return have == want, want, nil
	}
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

// plainFingerprint is the fingerprint of a record that canon.Plain
// accepts, under either rule. Both rules leave such a record as it is,
// so the canonical form of its fields without "fingerprint" (what
// fingerprintWith hashes) is its bytes without that member and the comma
// that joined it. ok is false for any other record, and for one without
// a fingerprint member: fingerprintWith decides those. It reads raw once
// (each step moves forward) and allocates only the answer.
func plainFingerprint(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '{' || !canon.Plain(raw) {
		return "", false
	}
	// A plain object has no whitespace and no escapes: each member is a
	// key in quotes, a colon and a value, and members are joined by commas.
	for i := 1; i < len(raw) && raw[i] == '"'; {
		q := bytes.IndexByte(raw[i+1:], '"')
		if q < 0 {
			return "", false // not plain after all: never so, kept for safety
		}
		keyEnd := i + 1 + q                 // the key's closing quote
		end := plainValueEnd(raw, keyEnd+2) // past ':'
		if end >= len(raw) {
			return "", false // as above
		}
		if string(raw[i+1:keyEnd]) != "fingerprint" {
			i = end + 1 // past the comma (or the closing brace: the loop ends)
			continue
		}
		start := i
		switch {
		case raw[end] == ',': // not the last member: drop the comma after it
			end++
		case start > 1: // the last of several: drop the comma before it
			start--
		}
		h := sha256.New()
		h.Write(raw[:start])
		h.Write(raw[end:])
		return fingerprintPrefix + hex.EncodeToString(h.Sum(nil)), true
	}
	return "", false
}

// plainValueEnd is where the value at raw[i:] ends, in a document
// canon.Plain accepted (strings hold no quote or backslash).
func plainValueEnd(raw []byte, i int) int {
	depth, inString := 0, false
	for ; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of a scalar, at its container's close
			}
			depth--
		case c == ',' && depth == 0:
			return i
		}
		if depth == 0 && !inString && (c == '"' || c == '}' || c == ']') {
			return i + 1
		}
	}
	return i
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
