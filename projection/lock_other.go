//go:build !unix

package projection

import "time"

// lockRoot has no flock to take here: one writer per root is the
// operator's to ensure.
func lockRoot(path string, wait time.Duration) (unlock func(), err error) { return func() {}, nil }
