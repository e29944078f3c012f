package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
)

// verifyResult compares a backup's data with what cluster nodes hold.
type verifyResult struct {
	File           string       `json:"file"`
	BackupIndex    uint64       `json:"backup_index"`
	BackupDataHash string       `json:"backup_data_hash"`
	Nodes          []verifyNode `json:"nodes"`
	// Match: every node asked holds exactly the backup's data.
	Match bool `json:"match"`
}

type verifyNode struct {
	ID       string `json:"id"`
	Index    uint64 `json:"index"`
	DataHash string `json:"data_hash"`
	Match    bool   `json:"match"`
	Error    string `json:"error,omitempty"`
}

func (a *app) snapshotVerifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "check that the cluster holds exactly the backup's data (after a restore)",
		Long: `verify compares the backup's data hash (snapshot inspect prints it) with the
data_hash the leader reports (GET /v1/cluster/state-hash; with --cluster,
every member's). The data hash covers every row a restore takes from the
backup, and leaves out what a restore keeps from the cluster or resets: the
members, the change feed (emptied), the applied index and the clock (never
moved backwards), the enabled command set and the retention settings. So it
matches right after snapshot restore FILE, into this cluster or another one,
and stops matching at the first write after it (or once a tick expires
something the backup held). The admin role. Exits 1 on a mismatch.`,
		Args: exactArgs(1, "the backup FILE"),
	}
	o := a.snapshotFlags(cmd)
	all := cmd.Flags().Bool("cluster", false, "compare every member's state, not only the leader's")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		info, err := inspectFile(args[0])
		if err != nil {
			return err
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		st, err := c.Cluster().Status(ctx)
		if err != nil {
			return err
		}
		res := verifyResult{File: args[0], BackupIndex: info.Index, BackupDataHash: info.DataHash, Match: true}
		// The leader first; with --cluster, every other member as of the
		// leader's index at least (state-hash?index= waits for it), so a
		// follower that has not applied the last write yet is not taken
		// for one that holds other data.
		var members []client.MemberStatus
		for _, m := range st.Members {
			if m.ID == st.LeaderID {
				members = append([]client.MemberStatus{m}, members...)
			} else if *all {
				members = append(members, m)
			}
		}
		var at uint64
		for _, m := range members {
			n := verifyNode{ID: m.ID}
			h, err := a.stateHashOf(ctx, a.memberBase(m.APIAddr), at)
			if err == nil && h.Data == "" {
				err = errors.New("the node reports no data_hash (a release before snapshot verify)")
			}
			if err != nil {
				n.Error = err.Error()
			} else {
				n.Index, n.DataHash, n.Match = h.Index, h.Data, h.Data == info.DataHash
				if m.ID == st.LeaderID {
					at = h.Index
				}
			}
			res.Match = res.Match && n.Match
			res.Nodes = append(res.Nodes, n)
		}
		if len(res.Nodes) == 0 {
			return fmt.Errorf("node %s knows no leader to compare with", st.NodeID)
		}
		if err := o.print(a.stdout, res, func(w io.Writer) error { return verifyTable(w, res) }); err != nil {
			return err
		}
		if !res.Match {
			return fmt.Errorf("the cluster does not hold the data of %s", args[0])
		}
		return nil
	}
	return cmd
}

// stateHashOf asks one node for its state hashes: as of index at when
// it is not 0 (the node waits until it has applied it), or as of any
// later index if that one was applied inside a batch or has passed.
func (a *app) stateHashOf(ctx context.Context, base string, at uint64) (*client.StateHash, error) {
	c, err := a.nodeAPI(base)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if at > 0 {
		h, err := c.Cluster().StateHash(ctx, at)
		if !errors.Is(err, errs.Conflict) {
			return h, err
		}
	}
	return c.Cluster().StateHash(ctx, 0)
}

func verifyTable(w io.Writer, res verifyResult) error {
	verdict := "MATCHES"
	if !res.Match {
		verdict = "DOES NOT MATCH"
	}
	fmt.Fprintf(w, "backup %s (index %d), data hash %s\nthe cluster %s it\n", res.File, res.BackupIndex, res.BackupDataHash, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tINDEX\tDATA HASH\tMATCH\tERROR")
	for _, n := range res.Nodes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%s\n", n.ID, n.Index, orDash(n.DataHash), n.Match, orDash(n.Error))
	}
	return tw.Flush()
}

// contextFor is a context bounded by d.
func contextFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
