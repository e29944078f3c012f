package tinydisk

import (
	"errors"
	"fmt"
	"github.com/arbiterhq/arbiter/internal/privileged"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size (mount's syntax: "8m") on a new temporary
// directory, unmounted when the test ends, and returns the directory. It
// skips the test where the mount is refused (not root).
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		privileged.Unavailable(t, fmt.Sprintf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// maxFill bounds Fill: no tmpfs a test mounts is this large.
const maxFill = 1 << 30

// Fill writes the file path until its file system is full, then gives
// free bytes back (0: none), and fails the test on any other error.
func Fill(t testing.TB, path string, free int64) {
	t.Helper()
	if err := fill(path, free); err != nil {
		t.Fatal(err)
	}
}

func fill(path string, free int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for n < maxFill {
		w, err := f.Write(chunk)
		n += int64(w)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			if free > 0 {
				return f.Truncate(max(n-free, 0))
			}
			return nil
		case err != nil:
			return fmt.Errorf("filling %s: %w", path, err)
		}
	}
	return fmt.Errorf("%s never filled: wrote %d bytes", path, n)
}
