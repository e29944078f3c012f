package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// MaxSafeInteger is the largest integer magnitude a digest input may hold:
// 2^53-1, the largest integer every JSON implementation reads exactly
// (RFC 7493, I-JSON). RFC 8785 writes numbers as IEEE doubles, so a larger
// integer would be rounded differently by a client that keeps integers
// exact (Go's int64, Python's int) and one that does not.
const MaxSafeInteger = 1<<53 - 1

// JCS is the one canonical form of every digest and fingerprint a client
// computes: RFC 8785, the JSON Canonicalization Scheme. Object keys are
// sorted by their UTF-16 code units, there is no whitespace, strings carry
// only the escapes JSON requires (quote, backslash and control characters;
// U+2028 and U+2029 stay as they are), and numbers are written as
// ECMAScript does.
//
// The rule is applied by a well-kept implementation of the RFC
// (github.com/gowebpki/jcs, a port of the RFC author's reference code), not
// by hand. On top of the RFC, JCS refuses what would make two correct
// implementations disagree or what a hostile value could use against a
// replica: invalid UTF-8, lone surrogate escapes, duplicate object keys,
// nesting beyond MaxDepth, and any number that is not an integer within
// ±MaxSafeInteger (digest inputs in Arbiter are integers only).
//
// docs/canonical-json.md states the rule for client authors, and
// testdata/jcs_vectors.json holds the test vectors every client is
// checked against.
func JCS(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	}
	if err := CheckEscapes(raw); err != nil {
		return nil, err
	}
	if err := checkDigestValue(raw); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return out, nil
}

// JCSValue is JCS of a Go value as encoding/json marshals it.
func JCSValue(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return JCS(raw)
}

// checkDigestValue reads raw once: exactly one value, nesting within
// MaxDepth, no duplicate key in any object, and every number an integer
// within ±MaxSafeInteger.
func checkDigestValue(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := checkValue(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after value", ErrInvalid)
	}
	return nil
}

// checkValue checks the value that starts at dec's next token. Recursion
// is bounded by MaxDepth.
func checkValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch x := tok.(type) {
	case json.Number:
		return checkSafeInteger(string(x))
	case json.Delim: // '[' or '{': the decoder yields closing ones only below
		if depth >= MaxDepth {
			return fmt.Errorf("%w: nested deeper than %d", ErrInvalid, MaxDepth)
		}
		var seen map[string]bool
		if x == '{' {
			seen = map[string]bool{}
		}
		for dec.More() {
			if seen != nil {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("%w: %v", ErrInvalid, err)
				}
				k, _ := kt.(string) // the decoder yields only strings as keys
				if seen[k] {
					return fmt.Errorf("%w: duplicate object key %q", ErrInvalid, truncate(k))
				}
				seen[k] = true
			}
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	return nil
}

// checkSafeInteger accepts a number literal whose value is an integer
// within ±MaxSafeInteger, in any JSON spelling (10, 1e1, 10.0).
func checkSafeInteger(lit string) error {
	n, err := Number(lit)
	if err != nil {
		return err
	}
	digits := strings.TrimPrefix(n, "-")
	if !allDigits(digits) || len(digits) > 16 {
		return fmt.Errorf("%w: number %s in a digest input is not an integer within ±%d", ErrInvalid, truncate(lit), MaxSafeInteger)
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		v = v*10 + uint64(digits[i]-'0')
	}
	if v > MaxSafeInteger {
		return fmt.Errorf("%w: number %s in a digest input is not an integer within ±%d", ErrInvalid, truncate(lit), MaxSafeInteger)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
