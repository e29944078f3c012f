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

// fingerprint is "v1:" and the hex SHA-256 of the canonical JSON of the
// record's fields without "fingerprint".
func fingerprint(fields object) (string, error) {
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
		return "", err
	}
	sum := sha256.Sum256(c)
	return fingerprintPrefix + hex.EncodeToString(sum[:]), nil
}

// Fingerprint computes the fingerprint of a record given as JSON, whatever
// fingerprint it carries (or none).
func Fingerprint(raw []byte) (string, error) {
	fields, err := topFields(raw)
	if err != nil {
		return "", err
	}
	return fingerprint(fields)
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
