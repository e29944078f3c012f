//go:build !unix

package projection

import (
	"fmt"
	"os"
)

// lockRoot opens the lock file; without flock, one node per root is the
// operator's to ensure.
func lockRoot(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open root lock: %w", err)
	}
	return f, nil
}
