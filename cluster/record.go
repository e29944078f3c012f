package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The data directory's record of its membership: member.json beside
// raft.db. It says which member the directory belongs to (id, raft and
// API addresses), of which cluster, and where the other members' APIs
// were last seen. Start compares a node's configuration with it, so that
// a wrong flag is refused before it can do harm (see checkResume); a
// running node keeps it current (keepRecord), and recordes a new address
// only once the cluster holds it.

// RecordFile is the name of the record in a data directory.
const RecordFile = "member.json"

// maxRecordBytes bounds what is read of a record.
const maxRecordBytes = 1 << 20

// recordFormat is the record's format version.
const recordFormat = 1

// MemberRecord is the content of RecordFile.
type MemberRecord struct {
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
	Peers []PeerRecord `json:"peers,omitempty"`
}

// PeerRecord is another member's API address.
type PeerRecord struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
}

// ReadRecord reads dir's record; it is nil, without error, when there is
// none (a new directory, or one written by a release before records).
func ReadRecord(dir string) (*MemberRecord, error) {
	f, err := os.Open(filepath.Join(dir, RecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read %s: %v", RecordFile, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read %s: %v", RecordFile, err)
	}
	if len(raw) > maxRecordBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "%s is larger than %d bytes: not a member record", filepath.Join(dir, RecordFile), maxRecordBytes)
	}
	var r MemberRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%s is damaged: %v", filepath.Join(dir, RecordFile), err)
	}
	if r.Format != recordFormat || r.ID == "" {
		return nil, errs.Errorf(errs.CodeInvalid, "%s: unknown format %d or no id", filepath.Join(dir, RecordFile), r.Format)
	}
	return &r, nil
}

// writeRecord replaces dir's record atomically: a temporary sibling,
// fsync, rename, fsync of the directory.
func writeRecord(dir string, r MemberRecord) error {
	r.Format = recordFormat
	body, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+RecordFile+".*.tmp")
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
	if err := os.Rename(tmp.Name(), filepath.Join(dir, RecordFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// recordBox holds a node's record and writes every change of it.
type recordBox struct {
	mu  sync.Mutex
	dir string // "" when the node keeps no record (no data directory)
	rec MemberRecord
}

func (b *recordBox) get() MemberRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rec
	r.Peers = slices.Clone(r.Peers)
	return r
}

// set replaces the record and writes it.
func (b *recordBox) set(dir string, r MemberRecord) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dir, b.rec = dir, r
	if dir == "" {
		return nil
	}
	if err := writeRecord(dir, r); err != nil {
		return errs.Errorf(errs.CodeInternal, "write %s: %v", filepath.Join(dir, RecordFile), err)
	}
	return nil
}

// update applies change to the record and writes it if it changed.
func (b *recordBox) update(change func(*MemberRecord)) (changed bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rec
	r.Peers = slices.Clone(r.Peers)
	change(&r)
	if recordsEqual(r, b.rec) {
		return false, nil
	}
	if b.dir != "" {
		if err := writeRecord(b.dir, r); err != nil {
			return false, err
		}
	}
	b.rec = r
	return true, nil
}

func recordsEqual(a, b MemberRecord) bool {
	return a.ClusterID == b.ClusterID && a.ID == b.ID && a.RaftAddr == b.RaftAddr && a.APIAddr == b.APIAddr && slices.Equal(a.Peers, b.Peers)
}

// recordSpacing is the least time between two refreshes of the record.
const recordSpacing = 500 * time.Millisecond

// keepRecord refreshes the record after every change of the local state,
// at most every recordSpacing, until the node stops.
func (mb *membership) keepRecord() {
	for {
		changed := mb.fsm.Changed()
		mb.refreshRecord()
		if sleepCtx(mb.ctx, recordSpacing) != nil {
			return
		}
		select {
		case <-changed:
		case <-time.After(time.Second): // configuration changes apply nothing to the FSM at times
		case <-mb.ctx.Done():
			return
		}
	}
}

// refreshRecord records the cluster's id once replicated, this member's
// addresses once the cluster holds them (which ends a move), and the
// other members' API addresses.
func (mb *membership) refreshRecord() {
	servers, err := mb.servers()
	if err != nil {
		return
	}
	meta := mb.metadata()
	moved := false
	changed, err := mb.record.update(func(r *MemberRecord) {
		if id := mb.fsm.ClusterID(); id != "" && id != r.ClusterID {
			if r.ClusterID != "" {
				mb.logger.Info("the cluster chose another id than the one this node proposed", "cluster_id", id, "proposed", r.ClusterID)
			}
			r.ClusterID = id
		}
		var peers []PeerRecord
		for _, s := range servers {
			m := meta[string(s.ID)]
			switch {
			case string(s.ID) == mb.cfg.ID:
				if string(s.Address) == mb.raftAddr && m.APIAddr == mb.apiAddr {
					moved = r.RaftAddr != mb.raftAddr || r.APIAddr != mb.apiAddr
					r.RaftAddr, r.APIAddr = mb.raftAddr, mb.apiAddr
				}
			case m.APIAddr != "" && len(peers) < fsm.MaxMembers:
				peers = append(peers, PeerRecord{ID: string(s.ID), APIAddr: m.APIAddr})
			}
		}
		if len(peers) > 0 {
			slices.SortFunc(peers, func(a, b PeerRecord) int { return strings.Compare(a.ID, b.ID) })
			r.Peers = peers
		}
	})
	if err != nil {
		mb.logger.Warn("keeping the member record failed", "error", err)
		return
	}
	if changed && moved {
		mb.moving.Store(false)
		mb.logger.Info("the cluster holds this member's new addresses; recorded them", "raft_addr", mb.raftAddr, "api_addr", mb.apiAddr)
	}
}

// peerAPIs lists where this node may reach other members' APIs: the
// members it knows of (replicated metadata, then its record), then Join.
func (mb *membership) peerAPIs() []string {
	var out []string
	add := func(a string) {
		if a != "" && a != mb.apiAddr && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, m := range mb.fsm.Members() {
		if m.ID != mb.cfg.ID {
			add(m.APIAddr)
		}
	}
	for _, p := range mb.record.get().Peers {
		add(p.APIAddr)
	}
	for _, j := range mb.cfg.Join {
		add(j)
	}
	return out
}

// newClusterID is a random cluster id.
func newClusterID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a clock-based
		// id still tells clusters apart.
		return fmt.Sprintf("c%x", time.Now().UnixNano())
	}
	return "c" + hex.EncodeToString(b)
}
