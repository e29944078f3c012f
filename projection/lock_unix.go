//go:build unix

package projection

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockRoot takes an exclusive flock on path, waiting up to wait for
// another holder (another node writing the same root) to let go, and
// returns what releases it. Every write holds it from its comparison
// with current.json to its rename.
func lockRoot(path string, wait time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open root lock: %w", err)
	}
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("runtime root is locked by another writer for more than %v (%s)", wait, path)
			}
			return nil, fmt.Errorf("lock runtime root: %w", err)
		}
		time.Sleep(pause)
	}
}
