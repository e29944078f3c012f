//go:build unix

package projection

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockRoot takes an exclusive, non-blocking flock on path: two nodes
// writing one root could rename an older publication over a newer one.
// The lock ends when the file is closed or the process dies.
func lockRoot(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open root lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("runtime root is in use by another node (%s is locked): give every node its own root", path)
		}
		return nil, fmt.Errorf("lock runtime root: %w", err)
	}
	return f, nil
}
