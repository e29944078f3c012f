//go:build unix

package flock_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/flock"
)

// A second Acquire waits out its bound and is refused with ErrLocked while
// the first holds the lock, and succeeds once it is released; a waiter
// gets the lock as soon as the holder lets go within its wait.
func TestAcquireExcludesAndReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	release, err := flock.Acquire(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := flock.Acquire(path, 50*time.Millisecond); !errors.Is(err, flock.ErrLocked) {
		t.Fatalf("second Acquire while held: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("refused after %v, before its wait of 50ms", waited)
	}

	got := make(chan error, 1)
	go func() {
		r, err := flock.Acquire(path, time.Minute)
		if err == nil {
			err = r()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter after the release: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a waiter did not get the lock after its release")
	}
}

func TestAcquireReportsAnUnopenablePath(t *testing.T) {
	_, err := flock.Acquire(filepath.Join(t.TempDir(), "missing", "LOCK"), time.Second)
	if err == nil || errors.Is(err, flock.ErrLocked) {
		t.Fatalf("Acquire in a missing directory: %v, want an open error", err)
	}
}
