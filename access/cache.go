package access

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/arbiterhq/arbiter/identity"
)

// CacheFileName is the name of the guard's copy of the table in a node's
// data directory (arbiter serve: <data-dir>/access-table.json).
const CacheFileName = "access-table.json"

// maxCopyBytes bounds the copy a guard reads: MaxPrincipals principals of
// MaxTenants tenants and MaxCredentials hashes each stay far below it.
const maxCopyBytes = 64 << 20

// tableCopy is the copy of the table a guard last installed, as it keeps
// it on disk: hashes only (the table holds no token), and the FSM applied
// index it was installed at.
type tableCopy struct {
	Format      int                        `json:"format"` // 1
	Applied     uint64                     `json:"applied_index"`
	Source      string                     `json:"source"`
	FileVersion uint64                     `json:"file_version"`
	Index       uint64                     `json:"table_index"`
	Digest      string                     `json:"digest"`
	Principals  []identity.PrincipalConfig `json:"principals"`
}

// readCopy reads the copy at path: nil when there is none.
func readCopy(path string) (*tableState, uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxCopyBytes+1))
	if err != nil {
		return nil, 0, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("principals: the table copy %s %s; remove it to start with the --principals file until the node replays the cluster's table", path, fmt.Sprintf(format, args...))
	}
	if len(raw) > maxCopyBytes {
		return nil, 0, bad("is larger than %d bytes", maxCopyBytes)
	}
	var c tableCopy
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, bad("is unreadable: %v", err)
	}
	if c.Format != 1 {
		return nil, 0, bad("has format %d; this binary reads format 1", c.Format)
	}
	if len(c.Principals) > MaxPrincipals {
		return nil, 0, bad("holds %d principals, more than %d", len(c.Principals), MaxPrincipals)
	}
	if d := Digest(c.Principals); d != c.Digest {
		return nil, 0, bad("is damaged: its principals have digest %s, it says %s", d, c.Digest)
	}
	reg, err := identity.NewRegistry(c.Principals)
	if err != nil {
		return nil, 0, bad("is invalid: %v", err)
	}
	st := &tableState{registry: reg.AsTable(), source: c.Source, fileVersion: c.FileVersion, index: c.Index, digest: c.Digest,
		count: len(c.Principals), list: c.Principals, copied: true}
	return st, c.Applied, nil
}

// writeCopy replaces the copy at path with st as installed at applied
// (st nil: removes it), atomically: a temporary file in the same
// directory, synced, renamed over the copy, and the directory synced.
func writeCopy(path string, st *tableState, applied uint64) error {
	if st == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncDir(filepath.Dir(path))
	}
	raw, err := json.Marshal(tableCopy{Format: 1, Applied: applied, Source: st.source, FileVersion: st.fileVersion,
		Index: st.index, Digest: st.digest, Principals: st.list})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), CacheFileName+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
