package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// SoakEnv is the environment variable that turns the bounded CI runs into
// soaks: unset, every harness runs its bounded default; set to a Go
// duration ("30m"), the soak tests keep running new histories until that
// much time has passed.
const SoakEnv = "ARBITER_SOAK"

// SoakCheckedEnv, set to 1, limits a soak to the workloads porcupine checks
// against a model, so that all of its time goes to checked histories. The
// others (the fenced sink, reservations, projection) verify their own
// invariants; an unfiltered soak still draws them.
const SoakCheckedEnv = "ARBITER_SOAK_CHECKED"

// SoakOnlyChecked says whether SoakCheckedEnv asks for checked workloads
// only. Any value but "", "0" and "1" is an error.
func SoakOnlyChecked() (bool, error) {
	switch v := os.Getenv(SoakCheckedEnv); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want 1 or 0", SoakCheckedEnv, v)
	}
}

// SoakDuration is how long to soak, or false when no soak was asked for.
// A malformed value is an error, not a silent default.
func SoakDuration() (time.Duration, bool, error) {
	v, set := os.LookupEnv(SoakEnv)
	if !set || v == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%s=%q: want a positive Go duration such as 30m", SoakEnv, v)
	}
	return d, true, nil
}

// RandomSchedule is a soak history's faults: between 3 and 8, each drawn
// from every kind with repeats, in an order fixed by seed.
func RandomSchedule(seed uint64) []Fault {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]Fault, 3+rng.IntN(6))
	for i := range out {
		out[i] = Faults[rng.IntN(len(Faults))]
	}
	return out
}
