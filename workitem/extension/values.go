package extension

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/canon"
)

// Bounds of the record (each an explicit error, never a truncation).
const (
	MaxIdentifierBytes = 128
	MaxDimension       = 1 << 40
	MaxLimit           = 1 << 20
	MaxCost            = 1 << 30
	MaxLabels          = 16
	MaxAntiAffinity    = 16
	MaxTargetPolicies  = 16
)

// Reasons in detail.reason of the errors Parse returns.
const (
	ReasonInvalid             = "extension_invalid"
	ReasonFingerprintMismatch = "fingerprint_mismatch"
)

// invalid is a 422 naming the field (a path inside the record) with
// detail.reason extension_invalid.
func invalid(field, format string, args ...any) *errs.Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	e := errs.New(errs.CodeInvalid, "resource_reservation: "+msg)
	e.Detail = map[string]any{"field": field, "reason": ReasonInvalid}
	return e
}

// Opaque checks an opaque identifier under IdentifiersV1 (see the package
// doc): bounded UTF-8 without control characters that is neither an
// absolute or home path nor a URL carrying credentials. The record's
// identifiers answer to more (Identifier).
func Opaque(field, s string) error {
	if err := bounded(field, s); err != nil {
		return err
	}
	switch {
	case s[0] == '/' || s[0] == '\\':
		return invalid(field, "is an absolute path; paths never enter the record")
	case s[0] == '~':
		return invalid(field, "is a home-relative path; paths never enter the record")
	case isDrive(s):
		return invalid(field, "is an absolute path; paths never enter the record")
	case hasUserInfo(s):
		return invalid(field, "is a URL with user information; credentials never enter the record")
	}
	return nil
}

// bounded checks an identifier's size and characters: 1 to
// MaxIdentifierBytes of UTF-8 without control characters.
func bounded(field, s string) error {
	switch {
	case s == "":
		return invalid(field, "is empty")
	case len(s) > MaxIdentifierBytes:
		return invalid(field, "is %d bytes, more than %d", len(s), MaxIdentifierBytes)
	case !utf8.ValidString(s):
		return invalid(field, "is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return invalid(field, "contains control character %U", r)
		}
	}
	return nil
}

// isDrive reports whether s starts with a drive: "C:\" or "C:/".
func isDrive(s string) bool {
	return len(s) >= 3 && isLetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/')
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// hasUserInfo reports whether s is scheme://authority... with an '@' in
// the authority: a user name alone is often a token, so any user
// information counts as a credential.
func hasUserInfo(s string) bool {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return false
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return strings.Contains(rest, "@")
}

// object is one JSON object of the record, by key.
type object map[string]json.RawMessage

// decodeObject is json.Unmarshal of raw into an object. A record in
// canonical form is plain (canon.Plain), and its objects are read by
// canon.PlainMembers into the same map, without reflection; values alias
// raw, which nothing changes.
func decodeObject(raw []byte) (object, error) {
	o := object{}
	if canon.PlainMembers(raw, func(k, v []byte) { o[string(k)] = v }) {
		return o, nil
	}
	var d object
	err := json.Unmarshal(raw, &d)
	return d, err
}

// decodeArray is json.Unmarshal of raw into items, for a plain array by
// canon.PlainElements.
func decodeArray(raw []byte, items *[]json.RawMessage) error {
	if canon.PlainElements(raw, func(v []byte) { *items = append(*items, v) }) {
		return nil
	}
	return json.Unmarshal(raw, items)
}

// parseObject decodes raw as an object whose keys are exactly required
// plus any of optional, none null.
func parseObject(path string, raw json.RawMessage, required, optional []string) (object, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, invalid(path, "must be a JSON object")
	}
	o, err := decodeObject(raw)
	if err != nil {
		return nil, invalid(path, "must be a JSON object: %v", err)
	}
	if err := checkObject(path, o, required, optional); err != nil {
		return nil, err
	}
	return o, nil
}

// checkObject is parseObject's check of a decoded object's keys.
func checkObject(path string, o object, required, optional []string) error {
	for _, k := range sortedKeys(o) {
		if !contains(required, k) && !contains(optional, k) {
			return invalid(join(path, k), "is not a field of the record (schema_version %q is closed)", SchemaVersion)
		}
		if string(bytes.TrimSpace(o[k])) == "null" {
			return invalid(join(path, k), "is null")
		}
	}
	for _, k := range required {
		if _, ok := o[k]; !ok {
			return invalid(join(path, k), "is missing")
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// str decodes a JSON string that is an identifier under rules r.
func str(field string, raw json.RawMessage, r Identifiers) (string, error) {
	s, ok := jsonString(raw)
	if !ok {
		return "", invalid(field, "must be a JSON string")
	}
	return s, identifier(field, s, r)
}

// jsonString decodes raw (space around it allowed) if it is one JSON
// string. A string canon.Plain accepts has nothing to decode: its
// bytes between the quotes are its value.
func jsonString(raw []byte) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	if canon.Plain(t) {
		return string(t[1 : len(t)-1]), true
	}
	var s string
	return s, json.Unmarshal(t, &s) == nil
}

// integer decodes a JSON integer in lo..hi.
func integer(field string, raw json.RawMessage, lo, hi int64) (int64, error) {
	t := string(bytes.TrimSpace(raw))
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, invalid(field, "must be a JSON integer, not %.32s", t)
	}
	if v < lo || v > hi {
		return 0, invalid(field, "must be between %d and %d, not %d", lo, hi, v)
	}
	return v, nil
}

func boolean(field string, raw json.RawMessage) (bool, error) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(field, "must be true or false")
}

// list decodes a JSON array of at most max distinct identifiers.
func list(field string, raw json.RawMessage, max int, r Identifiers) ([]string, error) {
	var items []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' || decodeArray(t, &items) != nil {
		return nil, invalid(field, "must be a JSON array of strings")
	}
	if len(items) > max {
		return nil, invalid(field, "holds %d values, more than %d", len(items), max)
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, err := str(fmt.Sprintf("%s[%d]", field, i), it, r)
		if err != nil {
			return nil, err
		}
		if contains(out, s) {
			return nil, invalid(fmt.Sprintf("%s[%d]", field, i), "repeats %q", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// labels decodes a JSON object of at most MaxLabels identifier pairs.
func labels(field string, raw json.RawMessage, r Identifiers) (map[string]string, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, invalid(field, "must be a JSON object of strings")
	}
	o, err := decodeObject(raw)
	if err != nil {
		return nil, invalid(field, "must be a JSON object of strings")
	}
	if len(o) > MaxLabels {
		return nil, invalid(field, "holds %d labels, more than %d", len(o), MaxLabels)
	}
	out := make(map[string]string, len(o))
	for _, k := range sortedKeys(o) {
		if err := identifier(field+" key", k, r); err != nil {
			return nil, err
		}
		v, err := str(join(field, k), o[k], r)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
