package access

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
)

func testState(t *testing.T, index uint64, ids ...string) *tableState {
	t.Helper()
	var list []identity.PrincipalConfig
	for _, id := range ids {
		list = append(list, identity.PrincipalConfig{ID: id, Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin},
			TokenSHA256: []string{identity.HashToken(id + "-token")}})
	}
	reg, err := identity.NewRegistry(list)
	if err != nil {
		t.Fatal(err)
	}
	return &tableState{registry: reg, source: SourceAdmin, index: index, digest: Digest(list), count: len(list), list: list}
}

// The copy follows the table a guard installs (mode 0600, hashes only);
// a guard that starts with it keeps it in force against tables of older
// applied states, takes the table again from the copy's index on, and
// removes the copy when the table is gone as of such an index. A damaged
// copy is an error, not a silent fall back to the file.
func TestTableCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), CacheFileName)
	g := NewGuard()
	if err := g.SetCacheFile(path); err != nil {
		t.Fatal(err)
	}
	if src, _ := g.InForce(); src != "" || g.Registry() != nil {
		t.Fatalf("no copy, no file: %q in force", src)
	}
	if err := g.setTable(testState(t, 7, "root", "app"), 9); err != nil {
		t.Fatal(err)
	}
	if err := g.setTable(testState(t, 10, "root"), 10); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("copy mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "root-token") || !strings.Contains(string(raw), identity.HashToken("root-token")) {
		t.Errorf("the copy holds a token, or not the hash: %s", raw)
	}

	// A restart: the copy is in force, not an older state's table.
	g = NewGuard()
	if err := g.SetCacheFile(path); err != nil {
		t.Fatal(err)
	}
	if src, index := g.InForce(); src != "copy" || index != 10 {
		t.Fatalf("at start: %q at %d, want copy at 10", src, index)
	}
	if _, ok := g.Registry().ByToken("app-token"); ok {
		t.Fatal("the copy's registry accepts the removed principal")
	}
	if err := g.setTable(testState(t, 7, "root", "app"), 9); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Registry().ByToken("app-token"); ok {
		t.Fatal("an older applied state's table replaced the copy")
	}
	// The table is gone as of the copy's index: no copy, nothing in force.
	if err := g.setTable(nil, 10); err != nil {
		t.Fatal(err)
	}
	if src, _ := g.InForce(); src != "" {
		t.Errorf("after the table is gone: %q in force", src)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the copy is still there: %v", err)
	}

	// A damaged copy refuses the start.
	if err := g.setTable(testState(t, 11, "root"), 11); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), `"root"`, `"rooT"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewGuard().SetCacheFile(path); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a damaged copy: %v, want an error saying to remove it", err)
	}
}
