package seed

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Env is the environment variable a replay sets.
const Env = "ARBITER_SEED"

// For returns t's seed and logs it with how to replay it. A malformed
// ARBITER_SEED fails the test rather than being ignored.
func For(t testing.TB) uint64 {
	t.Helper()
	s, replay := uint64(time.Now().UnixNano()), false
	if v, ok := os.LookupEnv(Env); ok && v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q is not a decimal seed", Env, v)
		}
		s, replay = n, true
	}
	how := fmt.Sprintf("replay with %s=%d go test -run '^%s$'", Env, s, t.Name())
	if replay {
		how = "replaying it"
	}
	t.Logf("seed %d (%s)", s, how)
	return s
}
