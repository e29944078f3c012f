package workitem_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// A record with U+2028 in a string is where the old canonical form (Go's
// escaping) and RFC 8785 differ (issue 40, item 8): a client that follows
// the RFC must be accepted once the cluster has enabled submit version 3,
// records sealed under the old rule stay accepted, and a cluster that has
// not enabled version 3 decides exactly as before.
func TestFingerprintFollowsRFC8785OnceEnabled(t *testing.T) {
	e := baseExt()
	e.Repository = "org\u2028repo"
	rfc := sealedRecord(t, e)
	legacy := withFingerprint(t, rfc, legacyFingerprintOf(t, rfc))
	if fingerprintOf(t, rfc) == fingerprintOf(t, legacy) {
		t.Fatal("the two rules agree on U+2028: the test proves nothing")
	}

	t.Run("enabled", func(t *testing.T) {
		l, s := newEnabled(t)
		setup(t, s)
		for i, rec := range []json.RawMessage{rfc, legacy} {
			if err := submitRaw(l, fmt.Sprintf("k%d", i), rec); err != nil {
				t.Fatalf("record %d refused: %v", i, err)
			}
		}
	})
	t.Run("submit version 2", func(t *testing.T) {
		l, _ := newService(t)
		enableWithSubmitAt(t, l, 2)
		if err := submitRaw(l, "k-rfc", rfc); reason(err) != extension.ReasonFingerprintMismatch {
			t.Fatalf("an RFC 8785 fingerprint before version 3: %v, want fingerprint_mismatch", err)
		}
		if err := submitRaw(l, "k-legacy", legacy); err != nil {
			t.Fatalf("a legacy fingerprint at version 2 refused: %v", err)
		}
	})
}

// sealedRecord seals e (the RFC 8785 fingerprint).
func sealedRecord(t *testing.T, e extension.Extension) json.RawMessage {
	t.Helper()
	_, raw, err := extension.Seal(e)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// legacyFingerprintOf computes the old rule's fingerprint by hand: SHA-256
// of canon.JSON (Go's escaping) of the record without its fingerprint.
func legacyFingerprintOf(t *testing.T, rec json.RawMessage) string {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "fingerprint")
	raw, _ := json.Marshal(fields)
	c, err := canon.JSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c), `\u2028`) {
		t.Fatalf("the old rule no longer escapes U+2028: %s", c)
	}
	sum := sha256.Sum256(c)
	return "v1:" + hex.EncodeToString(sum[:])
}

func fingerprintOf(t *testing.T, rec json.RawMessage) string {
	t.Helper()
	var f struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.Unmarshal(rec, &f); err != nil {
		t.Fatal(err)
	}
	return f.Fingerprint
}

func withFingerprint(t *testing.T, rec json.RawMessage, fp string) json.RawMessage {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec, &fields); err != nil {
		t.Fatal(err)
	}
	fields["fingerprint"], _ = json.Marshal(fp)
	out, _ := json.Marshal(fields)
	return out
}

// submitRaw proposes a submit of item id with rec as
// metadata.resource_reservation straight to the FSM, past the service's
// own check, so that Apply decides.
func submitRaw(l interface {
	fsm.Proposer
	fsm.Reader
}, id string, rec json.RawMessage) error {
	return rawSubmitMeta(l, id, fmt.Sprintf(`{"resource_reservation":%s}`, rec))
}

// enableWithSubmitAt enables this binary's work-item commands with submit
// and submit-batch capped at version v.
func enableWithSubmitAt(t *testing.T, l fsm.Proposer, v uint16) {
	t.Helper()
	enableCapped(t, l, v, workitem.CmdSubmit, workitem.CmdSubmitBatch)
}

// enableCapped enables this binary's work-item commands with those of
// types capped at version v.
func enableCapped(t *testing.T, l fsm.Proposer, v uint16, types ...log.Type) {
	t.Helper()
	caps := fsm.ServedBy(workitem.Module())
	capped := 0
	for d := range caps.Domains {
		for c := range caps.Domains[d].Commands {
			if cc := &caps.Domains[d].Commands[c]; slices.Contains(types, cc.Type) {
				cc.Version, capped = v, capped+1
			}
		}
	}
	if capped != len(types) {
		t.Fatalf("capped %d commands, want %d", capped, len(types))
	}
	res, err := l.Propose(bg, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(caps)})
	if err != nil || res.Err != nil {
		t.Fatalf("enable: %v %v", err, res.Err)
	}
}
