// Package privileged decides what a test does where it lacks the
// privileges it needs (network namespaces, mounts): it skips, saying why,
// on a developer's machine, and fails where ARBITER_REQUIRE_PRIVILEGED=1
// says the privileges are there (.ci/run sets it; CI runs as root). A
// test that silently stops running is thereby a red CI, not a gap nobody
// sees.
package privileged

import (
	"os"
	"testing"
)

// Env is the variable that turns a skip for lack of privileges into a
// failure.
const Env = "ARBITER_REQUIRE_PRIVILEGED"

// Required reports whether Env asks privileged tests to run.
func Required() bool { return os.Getenv(Env) == "1" }

// Unavailable ends t because what it needs cannot be had here: a skip
// with reason, or a failure when Required.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s (%s=1: a privileged test must run here, not skip)", reason, Env)
	}
	t.Skip(reason)
}
