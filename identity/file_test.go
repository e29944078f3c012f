package identity_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
)

// A principals file is a bare array (file_version 0) or an object with a
// file_version, both strict.
func TestLoadFileForms(t *testing.T) {
	entry := fmt.Sprintf(`{"id": "ops", "tenants": ["*"], "roles": ["admin"], "token_sha256": [%q]}`, sum([]byte("ops-token")))
	for _, tc := range []struct {
		name, content string
		version       uint64
		want          string // error fragment; "" for success
	}{
		{"bare array", "[" + entry + "]", 0, ""},
		{"object", `{"file_version": 7, "principals": [` + entry + `]}`, 7, ""},
		{"object without a version", `{"principals": [` + entry + `]}`, 0, ""},
		{"object with an unknown field", `{"file_version": 1, "principals": [], "extra": 1}`, 0, "unknown field"},
		{"file_version too large", `{"file_version": 9007199254740992, "principals": []}`, 0, "above"},
		{"invalid principal", `{"file_version": 1, "principals": [{"id": "p", "tenants": ["a"], "roles": ["owner"], "token_sha256": ["` + sum([]byte("x")) + `"]}]}`, 0, "unknown role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, reg, err := identity.LoadFile(writeFile(t, tc.content))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.FileVersion != tc.version || len(f.Principals) != 1 || reg.Len() != 1 {
				t.Fatalf("file %+v, registry of %d", f, reg.Len())
			}
			if p, ok := reg.ByToken("ops-token"); !ok || p.ID != "ops" {
				t.Errorf("ByToken: %+v %v", p, ok)
			}
		})
	}
}
