package privileged_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/privileged"
)

// TestUnavailable runs a test that lacks its privileges in a child
// process, with and without the variable: it skips without, and fails
// with, saying why.
func TestUnavailable(t *testing.T) {
	if os.Getenv("PRIVILEGED_CHILD") == "1" {
		privileged.Unavailable(t, "no such privilege here")
		return
	}
	for _, c := range []struct {
		require  string
		fails    bool
		contains string
	}{
		{"", false, "SKIP"},
		{"1", true, "must run here"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestUnavailable$", "-test.v")
		cmd.Env = append(os.Environ(), "PRIVILEGED_CHILD=1", privileged.Env+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.contains) || !strings.Contains(string(out), "no such privilege here") {
			t.Errorf("%s=%q: err %v, output:\n%s", privileged.Env, c.require, err, out)
		}
	}
}
