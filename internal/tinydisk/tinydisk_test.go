//go:build linux

package tinydisk_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/arbiterhq/arbiter/internal/tinydisk"
)

// Fill leaves what it is asked to leave: nothing, or about free bytes
// (the tmpfs counts whole pages).
func TestFillLeavesTheBytesAskedFor(t *testing.T) {
	for _, free := range []int64{0, 64 << 10} {
		dir := tinydisk.Mount(t, "1m")
		tinydisk.Fill(t, filepath.Join(dir, "filler"), free)
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		left := int64(st.Bavail) * st.Bsize
		if left < free || left > free+2*st.Bsize {
			t.Errorf("asked to leave %d bytes, %d are free", free, left)
		}
	}
}
