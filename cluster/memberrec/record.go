// Package memberrec is the data directory's record of its membership:
// member.json beside the raft stores. It says which member the directory
// belongs to (id, raft and API addresses), of which cluster, and where the
// other members' APIs were last seen. A node compares its configuration
// with it before raft starts, and keeps it current while it runs
// (package cluster); the offline tools read it (cluster/offline).
package memberrec

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/arbiterhq/arbiter/errs"
)

// File is the name of the record in a data directory.
const File = "member.json"

// maxRecordBytes bounds what is read of a record.
const maxRecordBytes = 1 << 20

// recordFormat is the record's format version.
const recordFormat = 1

// Record is the content of File.
type Record struct {
	Format int `json:"format"`
	// ClusterID is the cluster's id once this member has seen it
	// replicated; on a node that bootstrapped the cluster, the id it chose
	// (and its first leader proposes).
	ClusterID string `json:"cluster_id,omitempty"`
	ID        string `json:"id"`
	RaftAddr  string `json:"raft_addr"`
	APIAddr   string `json:"api_addr"`
	// Peers are the other members' API addresses as last seen: where a
	// node that moved (ChangeAddress) asks the leader to follow it.
	Peers []Peer `json:"peers,omitempty"`
}

// Peer is another member's API address.
type Peer struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
}

// Read reads dir's record; it is nil, without error, when there is
// none (a new directory, or one written by a release before records).
func Read(dir string) (*Record, error) {
	f, err := os.Open(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read %s: %v", File, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read %s: %v", File, err)
	}
	if len(raw) > maxRecordBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "%s is larger than %d bytes: not a member record", filepath.Join(dir, File), maxRecordBytes)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%s is damaged: %v", filepath.Join(dir, File), err)
	}
	if r.Format != recordFormat || r.ID == "" {
		return nil, errs.Errorf(errs.CodeInvalid, "%s: unknown format %d or no id", filepath.Join(dir, File), r.Format)
	}
	return &r, nil
}

// Write replaces dir's record atomically: a temporary sibling,
// fsync, rename, fsync of the directory.
func Write(dir string, r Record) error {
	r.Format = recordFormat
	body, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+File+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(append(body, '\n')); err != nil {
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
	if err := os.Rename(tmp.Name(), filepath.Join(dir, File)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Box holds a node's record and writes every change of it.
type Box struct {
	mu  sync.Mutex
	dir string // "" when the node keeps no record (no data directory)
	rec Record
}

// Get is a copy of the record.
func (b *Box) Get() Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rec
	r.Peers = slices.Clone(r.Peers)
	return r
}

// Set replaces the record and writes it.
func (b *Box) Set(dir string, r Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dir, b.rec = dir, r
	if dir == "" {
		return nil
	}
	if err := Write(dir, r); err != nil {
		return errs.Errorf(errs.CodeInternal, "write %s: %v", filepath.Join(dir, File), err)
	}
	return nil
}

// Update applies change to the record and writes it if it changed.
func (b *Box) Update(change func(*Record)) (changed bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rec
	r.Peers = slices.Clone(r.Peers)
	change(&r)
	if equal(r, b.rec) {
		return false, nil
	}
	if b.dir != "" {
		if err := Write(b.dir, r); err != nil {
			return false, err
		}
	}
	b.rec = r
	return true, nil
}

func equal(a, b Record) bool {
	return a.ClusterID == b.ClusterID && a.ID == b.ID && a.RaftAddr == b.RaftAddr && a.APIAddr == b.APIAddr && slices.Equal(a.Peers, b.Peers)
}
