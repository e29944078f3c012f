package projection

import (
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/internal/flock"
)

// lockRoot takes the runtime root's exclusive lock at path, waiting up to
// wait for another holder (another node writing the same root) to let go,
// and returns what releases it. Every write holds it from its comparison
// with current.json to its rename. Where flock does not exist, one writer
// per root is the operator's to ensure (internal/flock).
func lockRoot(path string, wait time.Duration) (unlock func(), err error) {
	release, err := flock.Acquire(path, wait)
	switch {
	case errors.Is(err, flock.ErrLocked):
		return nil, fmt.Errorf("runtime root is locked by another writer for more than %v (%s)", wait, path)
	case err != nil:
		return nil, fmt.Errorf("lock runtime root: %w", err)
	}
	return func() { _ = release() }, nil
}
