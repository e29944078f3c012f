package store_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/log/store"
	"github.com/hashicorp/raft"
)

// Each kind stores, closes and reopens its log and stable store; a data
// directory keeps the kind it was created with whatever a later open
// asks for; a directory holding both kinds, or an unknown kind, is
// refused.
func TestStoreKinds(t *testing.T) {
	for _, kind := range []string{store.WAL, store.Bolt} {
		for _, noSync := range []bool{false, true} {
			t.Run(kind, func(t *testing.T) {
				dir := t.TempDir()
				if has, err := store.HasLogFiles(dir); has || err != nil {
					t.Fatalf("HasLogFiles of an empty directory = %v, %v", has, err)
				}
				s, err := store.Open(dir, store.Options{Kind: kind, NoSyncUnsafe: noSync, LogOutput: os.Stderr})
				if err != nil {
					t.Fatal(err)
				}
				if has, err := store.HasLogFiles(dir); !has || err != nil {
					t.Fatalf("HasLogFiles after opening a %s store = %v, %v", kind, has, err)
				}
				if s.Kind != kind {
					t.Fatalf("opened %s, asked for %s", s.Kind, kind)
				}
				entries := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")}, {Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("b")}}
				if err := s.Log.StoreLogs(entries); err != nil {
					t.Fatal(err)
				}
				if err := s.Stable.SetUint64([]byte("CurrentTerm"), 7); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				other := store.Bolt
				if kind == store.Bolt {
					other = store.WAL
				}
				s, err = store.Open(dir, store.Options{Kind: other, LogOutput: os.Stderr})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if s.Kind != kind {
					t.Fatalf("reopened as %s, created as %s", s.Kind, kind)
				}
				var got raft.Log
				if err := s.Log.GetLog(2, &got); err != nil || string(got.Data) != "b" {
					t.Fatalf("entry 2 after reopening: %+v %v", got, err)
				}
				if term, err := s.Stable.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
					t.Fatalf("term after reopening: %d %v", term, err)
				}
			})
		}
	}
	if _, err := store.Open(t.TempDir(), store.Options{Kind: "rocks"}); err == nil {
		t.Error("an unknown store kind was accepted")
	}
	both := t.TempDir()
	if err := os.WriteFile(filepath.Join(both, "raft.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(both, "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(both, store.Options{}); err == nil {
		t.Error("a directory holding both stores was accepted")
	}
}

// A data directory whose stores are open is refused to a second opener
// within a bound, on either kind (an offline tool run on a running node's
// directory must be told so, not wait forever), and opens again once the
// first holder closes it.
func TestSecondOpenerIsRefused(t *testing.T) {
	for _, kind := range []string{store.WAL, store.Bolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			first, err := store.Open(dir, store.Options{Kind: kind, LogOutput: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			second := make(chan error, 1)
			go func() {
				s, err := store.Open(dir, store.Options{Kind: kind, LogOutput: io.Discard})
				if err == nil {
					_ = s.Close()
				}
				second <- err
			}()
			select {
			case err := <-second:
				if err == nil {
					t.Fatal("a second opener of a directory in use succeeded")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a second opener of a directory in use still waits after 30 s")
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := store.Open(dir, store.Options{Kind: kind, LogOutput: io.Discard})
			if err != nil {
				t.Fatalf("reopen after the first holder closed: %v", err)
			}
			if err := again.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Raft truncates a follower's log tail when a new leader's entries
// conflict with it ("clearing log suffix"). raft-wal v0.4.0 marked the
// truncated tail segment sealed without writing its index block, so the
// next open failed every read with "sealed segment has no index block"
// (hashicorp/raft-wal#31, fixed in v0.4.1): the node could not restart.
// Each store must reopen after a tail truncation with the kept entries
// readable and the truncated ones gone, and take new entries after them.
func TestStoresReopenAfterATailTruncation(t *testing.T) {
	for _, kind := range []string{store.WAL, store.Bolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			opt := store.Options{Kind: kind, LogOutput: io.Discard}
			s, err := store.Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			var entries []*raft.Log
			for i := uint64(1); i <= 10; i++ {
				entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
			}
			if err := s.Log.StoreLogs(entries); err != nil {
				t.Fatal(err)
			}
			if err := s.Log.DeleteRange(8, 10); err != nil { // a deposed leader's tail
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = store.Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := uint64(1); i <= 7; i++ {
				var got raft.Log
				if err := s.Log.GetLog(i, &got); err != nil || got.Data[0] != byte(i) {
					t.Fatalf("entry %d after reopening: %+v %v", i, got, err)
				}
			}
			if last, err := s.Log.LastIndex(); err != nil || last != 7 {
				t.Fatalf("last index after reopening = %d, %v; want 7", last, err)
			}
			next := &raft.Log{Index: 8, Term: 2, Type: raft.LogCommand, Data: []byte("new")}
			if err := s.Log.StoreLog(next); err != nil {
				t.Fatalf("append after the truncation: %v", err)
			}
		})
	}
}

// Entries below the first index are gone, on both stores: raft decides
// to send a snapshot instead of entries by GetLog's answer. raft-wal alone
// still returns the compacted entries of a segment it kept.
func TestCompactedEntriesAreNotFound(t *testing.T) {
	for _, kind := range []string{store.WAL, store.Bolt} {
		t.Run(kind, func(t *testing.T) {
			// A cache of one entry, so that reads reach the store.
			s, err := store.Open(t.TempDir(), store.Options{Kind: kind, LogOutput: io.Discard, LogCacheSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var entries []*raft.Log
			for i := uint64(1); i <= 10; i++ {
				entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
			}
			if err := s.Log.StoreLogs(entries); err != nil {
				t.Fatal(err)
			}
			if err := s.Log.DeleteRange(1, 5); err != nil { // a compaction after a snapshot at 5
				t.Fatal(err)
			}
			if first, err := s.Log.FirstIndex(); err != nil || first != 6 {
				t.Fatalf("first index = %d, %v; want 6", first, err)
			}
			for i := uint64(1); i <= 10; i++ {
				var got raft.Log
				err := s.Log.GetLog(i, &got)
				switch {
				case i <= 5 && !errors.Is(err, raft.ErrLogNotFound):
					t.Errorf("compacted entry %d: %+v, %v; want raft.ErrLogNotFound", i, got, err)
				case i > 5 && (err != nil || got.Index != i || got.Data[0] != byte(i)):
					t.Errorf("entry %d: %+v, %v", i, got, err)
				}
			}
		})
	}
}
