package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/hashicorp/raft"
)

// Offline tools: they work on the data directory of a stopped node, with
// no leader and no network.
//
// Recover is the way back from a lost quorum (like Consul's peers.json and
// etcd's --force-new-cluster): it rewrites the stored configuration of a
// stopped node (raft.RecoverCluster) so that the survivors named form a
// smaller cluster with every entry their logs hold. Every entry in the
// node's log counts as committed afterwards, also one that the old
// cluster never committed; an entry that only the lost members held is
// gone, acknowledged or not. Run it with the same members on every
// survivor, while all are stopped; the lost members must never come back
// with their old data (they would still count each other as a majority of
// the old configuration).
//
// SaveOffline writes the state of a stopped node's data directory as a
// backup: its latest snapshot, with every entry of its log after it
// applied, in the format of an online backup.

// RecoverMember is one member of the configuration Recover writes.
type RecoverMember struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
}

// RecoverOptions configure Recover.
type RecoverOptions struct {
	// DataDir is the stopped node's data directory.
	DataDir string
	// ID is the node's id; "" takes it from the directory's record.
	ID string
	// Members are the survivors, this node among them: all voters.
	Members []RecoverMember
	// Domains are what the node serves: Recover replays its log.
	Domains []domain.Domain
	Logger  *slog.Logger
}

// RecoverResult says what Recover did.
type RecoverResult struct {
	ID        string `json:"id"`
	ClusterID string `json:"cluster_id,omitempty"`
	// Previous is the configuration the node held; Members the new one.
	Previous []RecoverMember `json:"previous"`
	Members  []RecoverMember `json:"members"`
	// Index and Term are of the last entry of the node's log, which the
	// recovered state includes.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
}

// Recover rewrites the stored configuration of the stopped node in
// opts.DataDir to opts.Members. Nothing is written unless every check
// passes: options, an existing state, this node among the members, a log
// that replays.
func Recover(opts RecoverOptions) (*RecoverResult, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkRecoverMembers(opts.Members); err != nil {
		return nil, err
	}
	s, rec, err := openOffline(opts.DataDir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	id, err := offlineID(opts.DataDir, rec, opts.ID)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(opts.Members, func(m RecoverMember) bool { return m.ID == id }) {
		return nil, errs.Errorf(errs.CodeInvalid, "the members must include this node, %s: it is one of the survivors", id)
	}
	prev, err := storedConfiguration(s)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read the stored configuration: %v", err)
	}
	res := &RecoverResult{ID: id, Members: opts.Members}
	if rec != nil {
		res.ClusterID = rec.ClusterID
	}
	for _, sv := range prev.Servers {
		res.Previous = append(res.Previous, RecoverMember{ID: string(sv.ID), RaftAddr: string(sv.Address)})
	}
	if res.Index, res.Term, err = lastEntry(s); err != nil {
		return nil, err
	}
	f, err := fsm.New(fsm.Config{Modules: domain.Modules(opts.Domains), Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	conf.Logger = newHclog(opts.Logger, "raft")
	var servers []raft.Server
	for _, m := range opts.Members {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.RaftAddr)})
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	if err := raft.RecoverCluster(conf, f, s.Log, s.Stable, s.Snapshot, trans, raft.Configuration{Servers: servers}); err != nil {
		if h := f.Halted(); h != nil {
			return nil, errs.Errorf(errs.CodeConflict, "the log holds a command this binary cannot apply (%s): run recover with the binary the node runs", h)
		}
		return nil, errs.Errorf(errs.CodeInternal, "recover: %v", err)
	}
	if rec != nil {
		r := *rec
		r.Peers = slices.DeleteFunc(r.Peers, func(p PeerRecord) bool {
			return !slices.ContainsFunc(opts.Members, func(m RecoverMember) bool { return m.ID == p.ID })
		})
		if err := writeRecord(opts.DataDir, r); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "recovered, but writing %s failed: %v", RecordFile, err)
		}
	}
	opts.Logger.Warn("recovered: the configuration is rewritten", "id", id, "members", len(opts.Members), "index", res.Index, "term", res.Term)
	return res, nil
}

// lastEntry is the index and term of the last entry the stores hold: the
// log's last, else the newest snapshot's.
func lastEntry(s *Stores) (index, term uint64, err error) {
	if index, err = s.Log.LastIndex(); err != nil {
		return 0, 0, errs.Errorf(errs.CodeInternal, "read the log: %v", err)
	}
	if index > 0 {
		var last raft.Log
		if err := s.Log.GetLog(index, &last); err != nil {
			return 0, 0, errs.Errorf(errs.CodeInternal, "read the log: %v", err)
		}
		return index, last.Term, nil
	}
	snaps, err := s.Snapshot.List()
	if err != nil {
		return 0, 0, errs.Errorf(errs.CodeInternal, "list snapshots: %v", err)
	}
	if len(snaps) > 0 {
		return snaps[0].Index, snaps[0].Term, nil
	}
	return 0, 0, nil
}

func checkRecoverMembers(ms []RecoverMember) error {
	if len(ms) == 0 || len(ms) > fsm.MaxMembers {
		return errs.Errorf(errs.CodeInvalid, "members: want 1 to %d survivors, got %d", fsm.MaxMembers, len(ms))
	}
	ids, addrs := map[string]bool{}, map[string]bool{}
	for i, m := range ms {
		if err := bounds.Identifier(fmt.Sprintf("members[%d].id", i), m.ID); err != nil {
			return err
		}
		if _, _, err := net.SplitHostPort(m.RaftAddr); err != nil {
			return errs.Errorf(errs.CodeInvalid, "members[%d] (%s): raft_addr %q is not host:port", i, m.ID, m.RaftAddr)
		}
		if ids[m.ID] || addrs[m.RaftAddr] {
			return errs.Errorf(errs.CodeInvalid, "members[%d]: id %s or raft_addr %s listed twice", i, m.ID, m.RaftAddr)
		}
		ids[m.ID], addrs[m.RaftAddr] = true, true
	}
	return nil
}

// openOffline opens the stores of a stopped node's data directory that
// holds state, and reads its record (nil if it has none).
func openOffline(dir string) (*Stores, *MemberRecord, error) {
	if dir == "" {
		return nil, nil, errs.New(errs.CodeInvalid, "no data directory given")
	}
	has, err := HasState(dir)
	if err != nil {
		return nil, nil, errs.Errorf(errs.CodeUnavailable, "%s: %v", dir, err)
	}
	if !has {
		return nil, nil, errs.Errorf(errs.CodeNotFound, "%s holds no cluster state", dir)
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		return nil, nil, err
	}
	ls, err := logstore.Open(dir, logstore.Options{LogOutput: io.Discard})
	if err != nil {
		return nil, nil, errs.Errorf(errs.CodeUnavailable, "%v (is a node running on %s? stop it first)", err, dir)
	}
	return &Stores{Log: ls.Log, Stable: ls.Stable, Snapshot: ls.Snapshot, Close: ls.Close}, rec, nil
}

// offlineID settles the id of the node whose directory dir is: given, or
// as its record says.
func offlineID(dir string, rec *MemberRecord, id string) (string, error) {
	switch {
	case rec != nil && id != "" && rec.ID != id:
		return "", errs.Errorf(errs.CodeInvalid, "%s belongs to member %s, not %s", dir, rec.ID, id)
	case rec != nil:
		return rec.ID, nil
	case id == "":
		return "", errs.Errorf(errs.CodeInvalid, "%s does not record which member it belongs to: name it", dir)
	}
	return id, nil
}

// OfflineBackup describes what SaveOffline wrote.
type OfflineBackup struct {
	// SnapshotIndex is the index of the snapshot it started from (0:
	// none); Entries the log entries applied after it; LastIndex the last
	// entry of the log.
	SnapshotIndex uint64 `json:"snapshot_index"`
	Entries       uint64 `json:"entries"`
	LastIndex     uint64 `json:"last_index"`
	// Index is the applied index of the state written.
	Index uint64 `json:"index"`
}

// offlineBatch is how many log entries SaveOffline applies at once (the
// default MaxAppendEntries, raft's largest batch).
const offlineBatch = 128

// SaveOffline writes to w, in the backup format, the state of the stopped
// node in dir: its newest snapshot with every entry of its log after it
// applied, as raft would apply them. The log's last entries may not have
// been committed when the node stopped (a follower's, or a leader's cut
// off from its cluster): the backup includes them. domains are what the
// node serves.
func SaveOffline(dir string, domains []domain.Domain, w io.Writer) (*OfflineBackup, error) {
	s, _, err := openOffline(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	f, err := fsm.New(fsm.Config{Modules: domain.Modules(domains)})
	if err != nil {
		return nil, err
	}
	out := &OfflineBackup{}
	if out.SnapshotIndex, err = restoreNewest(s.Snapshot, f); err != nil {
		return nil, err
	}
	first, err := s.Log.FirstIndex()
	if err == nil {
		out.LastIndex, err = s.Log.LastIndex()
	}
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read the log: %v", err)
	}
	from := out.SnapshotIndex + 1
	if out.LastIndex >= from && first > from {
		return nil, errs.Errorf(errs.CodeInternal, "the log starts at %d, after the snapshot at %d: entries are missing", first, out.SnapshotIndex)
	}
	batch := make([]*raft.Log, 0, offlineBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		f.ApplyBatch(batch)
		batch = batch[:0]
		if h := f.Halted(); h != nil {
			return errs.Errorf(errs.CodeConflict, "the log holds a command this binary cannot apply (%s): save with the binary the node runs", h)
		}
		return nil
	}
	for i := from; i <= out.LastIndex; i++ {
		l := new(raft.Log)
		if err := s.Log.GetLog(i, l); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "log entry %d: %v", i, err)
		}
		out.Entries++
		if l.Type != raft.LogCommand && l.Type != raft.LogConfiguration {
			continue // what raft never hands to the state machine
		}
		if batch = append(batch, l); len(batch) == offlineBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	out.Index = f.AppliedIndex()
	if err := f.WriteSnapshot(w); err != nil {
		return nil, err
	}
	return out, nil
}

// restoreNewest restores the newest snapshot that restores into f, and
// returns its index (0 when there is none).
func restoreNewest(store raft.SnapshotStore, f *fsm.FSM) (uint64, error) {
	snaps, err := store.List()
	if err != nil {
		return 0, errs.Errorf(errs.CodeInternal, "list snapshots: %v", err)
	}
	var failures []error
	for _, meta := range snaps {
		_, rc, err := store.Open(meta.ID)
		if err == nil {
			err = f.Restore(rc) // closes rc
		}
		if err == nil {
			return meta.Index, nil
		}
		failures = append(failures, fmt.Errorf("snapshot %s: %w", meta.ID, err))
	}
	if len(failures) > 0 {
		return 0, errs.Errorf(errs.CodeInternal, "no snapshot restores: %v", errors.Join(failures...))
	}
	return 0, nil
}
