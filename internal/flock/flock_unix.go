//go:build unix

package flock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Acquire takes an exclusive lock on path (created if missing), retrying
// for up to wait while another holder has it, and returns what releases
// it. When the lock is still held after wait the error wraps ErrLocked.
func Acquire(path string, wait time.Duration) (release func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f.Close, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: %w for more than %v", path, ErrLocked, wait)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(pause)
	}
}
