package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster/memberrec"
	"github.com/arbiterhq/arbiter/cluster/offline"
	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/hashicorp/raft"
)

// What Start checks before raft starts, so that one wrong flag is
// refused with a message instead of quietly making a second cluster,
// taking over another member or leaving a node that can never be reached:
//
//   - a node without state needs Bootstrap, Join or AwaitJoin, and nothing
//     is created in its data directory until it has one (checkFresh);
//   - a node with state must be the member its data directory records,
//     still in the configuration it holds, at the addresses it records
//     unless ChangeAddress asks to move it (checkResume);
//   - a node with state given Join checks that Join names members of its
//     own cluster (checkJoinTargets).

// checkFresh refuses, before anything is written to the data directory,
// a node without state that has nothing to start from. It only looks for
// a log store's files and snapshots; a directory that has them is opened and judged
// by refuseFresh.
func (mb *membership) checkFresh() error {
	if mb.cfg.Stores != nil {
		return nil
	}
	if logs, err := logstore.HasLogFiles(mb.cfg.DataDir); err != nil || logs {
		return nil // state perhaps: judged once the stores are open
	}
	snaps, err := filepath.Glob(filepath.Join(mb.cfg.DataDir, "snapshots", "*", "meta.json"))
	if err != nil || len(snaps) > 0 {
		return nil
	}
	if err := mb.refuseFresh(false); err != nil {
		return err
	}
	if mb.cfg.Restore != "" { // a damaged backup must not leave a data directory behind
		f, err := os.Open(mb.cfg.Restore)
		if err != nil {
			return errs.Errorf(errs.CodeInvalid, "%s: %v", mb.cfg.name("Restore"), err)
		}
		defer f.Close()
		if _, err := mb.fsm.InspectSnapshot(f); err != nil {
			return errs.Errorf(errs.CodeInvalid, "%s %s: %v", mb.cfg.name("Restore"), mb.cfg.Restore, err)
		}
	}
	return nil
}

// refuseFresh is checkFresh's decision, given whether there is state.
func (mb *membership) refuseFresh(has bool) error {
	nm := mb.cfg.name
	switch {
	case !has && !mb.cfg.Bootstrap && len(mb.cfg.Join) == 0 && !mb.cfg.AwaitJoin:
		return errs.Errorf(errs.CodeInvalid, "%s %s holds no cluster state: start with %s to create a new cluster, or with %s to join an existing one",
			nm("DataDir"), mb.cfg.DataDir, nm("Bootstrap"), nm("Join"))
	case has && mb.cfg.Restore != "":
		return errs.Errorf(errs.CodeConflict, "%s seeds a new cluster, and %s %s already holds cluster state: restore into a running cluster with `arbiter snapshot restore`, or seed from an empty %s",
			nm("Restore"), nm("DataDir"), mb.cfg.DataDir, nm("DataDir"))
	}
	return nil
}

// prepareRecord checks a node with state against its data directory's
// record and stored configuration (and, with Join, the cluster Join
// names), seeds a new cluster from a backup (seed, with Restore), and
// writes the
// record this start begins with.
func (mb *membership) prepareRecord(ctx context.Context, hasState bool, stores *Stores, seed func() error) error {
	dir := mb.cfg.DataDir
	rec, err := memberrec.Read(dir)
	if dir == "" {
		rec, err = nil, nil
	}
	if err != nil {
		return err
	}
	if !hasState {
		fresh := memberrec.Record{ID: mb.cfg.ID, RaftAddr: mb.raftAddr, APIAddr: mb.apiAddr}
		if mb.cfg.Bootstrap {
			fresh.ClusterID = newClusterID() // proposed by the first leader (ensureClusterID)
		}
		if seed != nil {
			if err := seed(); err != nil {
				return err
			}
		}
		return mb.record.Set(dir, fresh)
	}
	conf, err := offline.StoredConfiguration(stores.Snapshot, stores.Log)
	if err != nil {
		return fmt.Errorf("cluster: read the stored raft configuration: %w", err)
	}
	moving, err := mb.checkResume(rec, conf)
	if err != nil {
		return err
	}
	if len(mb.cfg.Join) > 0 {
		if err := mb.checkJoinTargets(ctx, rec); err != nil {
			return err
		}
	}
	if rec == nil { // a data directory of a release before records
		rec = &memberrec.Record{ID: mb.cfg.ID, RaftAddr: mb.raftAddr, APIAddr: mb.apiAddr}
	}
	mb.moving.Store(moving)
	// A move is recorded once the cluster holds the new addresses
	// (refreshRecord); until then the record keeps the old ones.
	return mb.record.Set(dir, *rec)
}

// checkResume checks a node with state against what its data directory
// says: the member it belongs to, whether that member is still in the
// configuration, and its addresses. It reports whether the node moves
// (ChangeAddress with addresses that differ).
func (mb *membership) checkResume(rec *memberrec.Record, conf raft.Configuration) (moving bool, err error) {
	nm := mb.cfg.name
	dir := mb.cfg.DataDir
	if rec != nil && rec.ID != mb.cfg.ID {
		return false, errs.Errorf(errs.CodeConflict, "%s %s belongs to member %s, not %s: start it with %s %s, or give %s an empty %s of its own",
			nm("DataDir"), dir, rec.ID, mb.cfg.ID, nm("ID"), rec.ID, mb.cfg.ID, nm("DataDir"))
	}
	var self *raft.Server
	var ids []string
	for i, s := range conf.Servers {
		ids = append(ids, string(s.ID))
		if string(s.ID) == mb.cfg.ID {
			self = &conf.Servers[i]
		}
	}
	if self == nil && len(conf.Servers) > 0 {
		return false, errs.Errorf(errs.CodeConflict, "member %s was removed from its cluster%s: the configuration in %s %s holds only %s. To join again, start it with an empty %s and %s",
			mb.cfg.ID, clusterOf(rec), nm("DataDir"), dir, strings.Join(ids, ", "), nm("DataDir"), nm("Join"))
	}
	storedRaft, storedAPI := "", ""
	if rec != nil {
		storedRaft, storedAPI = rec.RaftAddr, rec.APIAddr
	}
	if self != nil {
		storedRaft = string(self.Address)
	}
	if !mb.cfg.ChangeAddress && self != nil && rec != nil && rec.RaftAddr == mb.raftAddr && string(self.Address) != mb.raftAddr {
		return false, errs.Errorf(errs.CodeConflict, "member %s%s was replaced: its configuration names raft address %s for it, not this node's %s. To join again, start it with an empty %s, another %s and %s",
			mb.cfg.ID, clusterOf(rec), self.Address, mb.raftAddr, nm("DataDir"), nm("ID"), nm("Join"))
	}
	raftMoved := storedRaft != "" && storedRaft != mb.raftAddr
	apiMoved := storedAPI != "" && storedAPI != mb.apiAddr
	if !raftMoved && !apiMoved {
		return false, nil
	}
	if mb.cfg.ChangeAddress {
		mb.logger.Warn("this member moves to new addresses; the leader is asked to follow",
			"raft_addr", mb.raftAddr, "from_raft_addr", storedRaft, "api_addr", mb.apiAddr, "from_api_addr", storedAPI)
		return true, nil
	}
	return false, errs.Errorf(errs.CodeConflict,
		"member %s%s is at raft address %s and API address %s (as %s %s records); this start gives raft address %s and API address %s. Start it with %s %s and %s %s, or add %s to move the member to the new addresses (the leader makes the change)",
		mb.cfg.ID, clusterOf(rec), storedRaft, orNone(storedAPI), nm("DataDir"), dir, mb.raftAddr, mb.apiAddr,
		nm("RaftAddr"), storedRaft, nm("HTTPAddr"), orNone(storedAPI), nm("ChangeAddress"))
}

func clusterOf(rec *memberrec.Record) string {
	if rec == nil || rec.ClusterID == "" {
		return ""
	}
	return " of cluster " + rec.ClusterID
}

// joinCheckTimeout bounds asking one Join member for its cluster's id.
const joinCheckTimeout = 3 * time.Second

// checkJoinTargets asks the members Join names for their cluster's id and
// refuses to start a node with state that belongs to another cluster: a
// node joins only once, with an empty data directory. Members that cannot
// be asked, or do not know their id yet, cannot refuse it; the node then
// resumes its own membership, saying so.
func (mb *membership) checkJoinTargets(ctx context.Context, rec *memberrec.Record) error {
	nm := mb.cfg.name
	mine := ""
	if rec != nil {
		mine = rec.ClusterID
	}
	for _, base := range mb.cfg.Join {
		theirs, err := mb.clusterIDAt(ctx, base)
		switch {
		case err != nil:
			mb.logger.Warn("cannot ask a member named by Join which cluster it belongs to", "join", base, "error", err)
			continue
		case theirs == "" || mine == "":
			mb.logger.Warn("cannot tell whether a member named by Join is of this node's cluster: a cluster id is not known yet", "join", base, "theirs", theirs, "mine", mine)
			continue
		case theirs != mine:
			return errs.Errorf(errs.CodeConflict,
				"%s %s holds member %s of cluster %s, and %s %s names a member of cluster %s. A node joins a cluster only once, with an empty %s: to keep this member in cluster %s, start it without %s; to add a node to cluster %s, start it with an empty %s",
				nm("DataDir"), mb.cfg.DataDir, mb.cfg.ID, mine, nm("Join"), base, theirs, nm("DataDir"), mine, nm("Join"), theirs, nm("DataDir"))
		}
		mb.logger.Info("already a member of the cluster Join names; resuming (Join is needed only for a first start)", "cluster_id", mine, "join", base)
		return nil
	}
	return nil
}

// clusterIDAt asks the member at base (a URL or host:port) for the id of
// its cluster.
func (mb *membership) clusterIDAt(ctx context.Context, base string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, joinCheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mb.joinURL(base, "/v1/cluster/status"), nil)
	if err != nil {
		return "", err
	}
	var st Status
	if err := doJSON(mb.peers, req, &st); err != nil {
		return "", err
	}
	return st.ClusterID, nil
}
