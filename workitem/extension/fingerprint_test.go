package extension

import (
	"encoding/json"
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

// FuzzPlainFingerprint: whenever the shortcut answers, it is the
// fingerprint both rules give.
func FuzzPlainFingerprint(f *testing.F) {
	for _, r := range plainRecords {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPlainFingerprint(t, raw) })
}
