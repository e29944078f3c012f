// Package offline holds the offline tools: they work on the data directory of a stopped node, with
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
//
// It builds on what a running node leaves in its data directory (the
// raft stores, package log/store; the record, package cluster/memberrec)
// and needs no node: package cluster uses StoredConfiguration before
// raft starts.
package offline

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"

	"github.com/arbiterhq/arbiter/cluster/internal/hclogslog"
	"github.com/arbiterhq/arbiter/cluster/memberrec"
	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/hashicorp/raft"
)

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
	prev, err := StoredConfiguration(s.Snapshot, s.Log)
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
	conf.Logger = hclogslog.New(opts.Logger, "raft")
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
		r.Peers = slices.DeleteFunc(r.Peers, func(p memberrec.Peer) bool {
			return !slices.ContainsFunc(opts.Members, func(m RecoverMember) bool { return m.ID == p.ID })
		})
		if err := memberrec.Write(opts.DataDir, r); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "recovered, but writing %s failed: %v", memberrec.File, err)
		}
	}
	opts.Logger.Warn("recovered: the configuration is rewritten", "id", id, "members", len(opts.Members), "index", res.Index, "term", res.Term)
	return res, nil
}

// lastEntry is the index and term of the last entry the stores hold: the
// log's last, else the newest snapshot's.
func lastEntry(s *stores) (index, term uint64, err error) {
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
func openOffline(dir string) (*stores, *memberrec.Record, error) {
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
	rec, err := memberrec.Read(dir)
	if err != nil {
		return nil, nil, err
	}
	ls, err := logstore.Open(dir, logstore.Options{LogOutput: io.Discard})
	if err != nil {
		return nil, nil, errs.Errorf(errs.CodeUnavailable, "%v (is a node running on %s? stop it first)", err, dir)
	}
	return &stores{Log: ls.Log, Stable: ls.Stable, Snapshot: ls.Snapshot, Close: ls.Close}, rec, nil
}

// offlineID settles the id of the node whose directory dir is: given, or
// as its record says.
func offlineID(dir string, rec *memberrec.Record, id string) (string, error) {
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
