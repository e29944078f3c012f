package extension

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// plainRecords are records (or not) whose fingerprint plainFingerprint
// may read off their bytes.
var plainRecords = []string{
	`{"fingerprint":"v1:00"}`,
	`{"a":1,"fingerprint":"x"}`,
	`{"fingerprint":"x","z":[1,{"fingerprint":"y"}]}`,
	`{"a":{"fingerprint":"x"},"fingerprint":"v1:00","z":"}]"}`,
	"{\"a\":[],\"b\":{},\"c\":\"é\U0001F600\",\"fingerprint\":\"x\"}",
	`{"a":"x","fingerprint":1}`,
	`{"a":"x"}`,                                // no fingerprint member: the rules decide
	"{\"a\":\"\u2028\",\"fingerprint\":\"x\"}", // not plain: the rules decide
	`{"b":1,"a":2,"fingerprint":"x"}`,          // not plain (unsorted)
	`{}`,
	`[]`,
	`"fingerprint"`,
}

// checkPlainFingerprint fails if plainFingerprint answers for raw and
// either rule gives another fingerprint.
func checkPlainFingerprint(t *testing.T, raw []byte) {
	t.Helper()
	fp, ok := plainFingerprint(raw)
	if !ok {
		return
	}
	var fields object
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("plainFingerprint(%q) answered for a record that does not decode: %v", raw, err)
	}
	if _, has := fields["fingerprint"]; !has {
		t.Fatalf("plainFingerprint(%q) answered for a record without a fingerprint", raw)
	}
	legacy, err := legacyFingerprint(fields)
	if err != nil || legacy != fp {
		t.Fatalf("plainFingerprint(%q) = %s; the old rule gives %s (%v)", raw, fp, legacy, err)
	}
	rfc, err := fingerprint(fields)
	if err != nil || rfc != fp {
		t.Fatalf("plainFingerprint(%q) = %s; RFC 8785 gives %s (%v)", raw, fp, rfc, err)
	}
}

func TestPlainFingerprintAgreesWithTheRules(t *testing.T) {
	answered := 0
	for _, r := range plainRecords {
		checkPlainFingerprint(t, []byte(r))
		if _, ok := plainFingerprint([]byte(r)); ok {
			answered++
		}
	}
	if answered != 6 {
		t.Fatalf("plainFingerprint answered for %d of the records, want 6", answered)
	}
}

// checkDecoders fails if decodeObject, decodeArray or jsonString answer
// otherwise than encoding/json for raw.
func checkDecoders(t *testing.T, raw []byte) {
	t.Helper()
	o, err := decodeObject(raw)
	var want object
	if wantErr := json.Unmarshal(raw, &want); (err == nil) != (wantErr == nil) || !reflect.DeepEqual(o, want) && err == nil {
		t.Fatalf("decodeObject(%q) = %q, %v; encoding/json %q, %v", raw, o, err, want, wantErr)
	}
	var items, wantItems []json.RawMessage
	err = decodeArray(raw, &items)
	wantErr := json.Unmarshal(raw, &wantItems)
	if (err == nil) != (wantErr == nil) || err == nil && (len(items) != len(wantItems) || len(items) > 0 && !reflect.DeepEqual(items, wantItems)) {
		t.Fatalf("decodeArray(%q) = %q, %v; encoding/json %q, %v", raw, items, err, wantItems, wantErr)
	}
	s, ok := jsonString(raw)
	var wantS string
	t0 := bytes.TrimSpace(raw)
	wantOK := len(t0) > 0 && t0[0] == '"' && json.Unmarshal(t0, &wantS) == nil
	if ok != wantOK || ok && s != wantS {
		t.Fatalf("jsonString(%q) = %q, %v; encoding/json %q, %v", raw, s, ok, wantS, wantOK)
	}
}

// FuzzPlainShortcuts: whenever a shortcut for plain input answers, it is
// what the rules (the fingerprint) or encoding/json (the decoders) give.
func FuzzPlainShortcuts(f *testing.F) {
	for _, r := range plainRecords {
		f.Add([]byte(r))
	}
	for _, r := range []string{`"abc"`, `"a\"b"`, ` "x" `, "\"\u2028\"", `["a",1]`, `[]`, `{"a":{"b":[1]}}`} {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkPlainFingerprint(t, raw)
		checkDecoders(t, raw)
	})
}
