package store_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/arbiterhq/arbiter/internal/tinydisk"
	"github.com/arbiterhq/arbiter/log/store"
	"github.com/hashicorp/raft"
)

// A WAL whose disk fills just as its tail segment does cannot create the
// next segment (raft-wal's rotation fails preallocating it). Appends must
// fail while the disk is full, succeed again once space returns, without
// a restart, and every entry acknowledged must read back after a reopen.
// raft-wal alone stays stuck on the sealed segment until it is reopened.
func TestWALResumesAfterARotationFailedOnAFullDisk(t *testing.T) {
	disk := tinydisk.Mount(t, "1m")
	const segment = 64 << 10
	dir := filepath.Join(disk, "data")
	opt := store.Options{Kind: store.WAL, WALSegmentBytes: segment, LogOutput: io.Discard}
	s, err := store.Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // before the umount; a second Close is harmless
	var last uint64
	appendOne := func() error {
		l := &raft.Log{Index: last + 1, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("%0900d", last+1))}
		err := s.Log.StoreLogs([]*raft.Log{l})
		if err == nil {
			last++
		}
		return err
	}
	for range 10 {
		if err := appendOne(); err != nil {
			t.Fatal(err)
		}
	}
	// Leave less free than a segment, more than the tail needs to fill:
	// the tail seals, and the next segment cannot be made.
	filler := filepath.Join(disk, "filler")
	tinydisk.Fill(t, filler, 24<<10)

	failed := 0
	for i := 0; i < 200 && failed < 3; i++ {
		if err := appendOne(); err != nil {
			failed++
			if !errors.Is(err, syscall.ENOSPC) && !strings.Contains(err.Error(), "sealed") {
				t.Errorf("append on a full disk: %v", err)
			}
		}
	}
	if failed < 3 {
		t.Fatalf("no append failed in 200 on a full disk (last index %d)", last)
	}
	full := last
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 100 { // beyond the next segment too
		if err := appendOne(); err != nil {
			t.Fatalf("append %d once space returned (after %d acknowledged on the full disk): %v", last+1, full, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= last; i++ {
		var got raft.Log
		if err := s.Log.GetLog(i, &got); err != nil || string(got.Data) != fmt.Sprintf("%0900d", i) {
			t.Fatalf("entry %d of %d after reopening: %v", i, last, err)
		}
	}
	t.Logf("%d entries read back; %d appends failed on the full disk after %d", last, failed, full)
}
