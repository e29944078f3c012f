package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) endpointCommand() *cobra.Command {
	return group("endpoint", "the status and health of each node, as etcdctl endpoint does",
		`endpoint status and endpoint health ask each endpoint (--addr, or with
--cluster every member of the cluster) on its own, so that one node's
trouble shows as that node's.`,
		a.endpointStatusCommand(), a.endpointHealthCommand(), a.endpointHashkvCommand())
}

// endpoints lists the URLs to ask: --addr's, or with cluster every
// member's API as the first node that answers lists them.
func (a *app) endpoints(ctx context.Context, cluster bool) ([]string, error) {
	if !cluster {
		return a.addrs(), nil
	}
	c, err := a.coreClient()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st, err := c.Cluster().Status(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range st.Members {
		if b := a.memberBase(m.APIAddr); b != "" {
			out = append(out, b)
		}
	}
	return out, nil
}

// endpointStatus is one node's own account of itself.
type endpointStatus struct {
	Endpoint  string `json:"endpoint"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	ID        string `json:"id,omitempty"`
	// Version and Revision are the node's binary (arbiter_build_info).
	Version           string `json:"version,omitempty"`
	Revision          string `json:"revision,omitempty"`
	State             string `json:"state,omitempty"`
	IsLeader          bool   `json:"is_leader"`
	LeaderID          string `json:"leader_id,omitempty"`
	Term              uint64 `json:"term"`
	CommitIndex       uint64 `json:"commit_index"`
	AppliedIndex      uint64 `json:"applied_index"`
	LastLogIndex      uint64 `json:"last_log_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	// SnapshotBytes is the size of the last raft snapshot the node wrote
	// (the state's size; 0 before its first); DataDirBytes its data
	// directory's.
	SnapshotBytes int64  `json:"snapshot_bytes"`
	DataDirBytes  int64  `json:"data_dir_bytes"`
	Halted        string `json:"halted,omitempty"`
}

func (a *app) endpointStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "per endpoint: version, leader, term, indexes, snapshot and data size, reachable",
		Args:  cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	all := cmd.Flags().Bool("cluster", false, "ask every member of the cluster, not only --addr")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		ctx, cancel := a.context()
		defer cancel()
		bases, err := a.endpoints(ctx, *all)
		if err != nil {
			return err
		}
		rows := make([]endpointStatus, len(bases))
		var wg sync.WaitGroup
		for i, base := range bases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rows[i] = a.endpointStatusOf(ctx, base)
			}()
		}
		wg.Wait()
		if err := o.print(a.stdout, rows, func(w io.Writer) error { return endpointStatusTable(w, rows) }); err != nil {
			return err
		}
		for _, r := range rows {
			if !r.Reachable {
				return fmt.Errorf("%s is unreachable", r.Endpoint)
			}
		}
		return nil
	}
	return cmd
}

func (a *app) endpointStatusOf(ctx context.Context, base string) endpointStatus {
	row := endpointStatus{Endpoint: base}
	p := a.probe(ctx, base)
	if p.err != nil {
		row.Error = p.err.Error()
		return row
	}
	st := p.status
	row.Reachable = true
	row.ID, row.State, row.LeaderID, row.IsLeader = st.NodeID, st.State, st.LeaderID, st.LeaderID == st.NodeID && st.NodeID != ""
	row.Term, row.CommitIndex, row.AppliedIndex = st.Term, st.CommitIndex, st.AppliedIndex
	row.LastLogIndex, row.LastSnapshotIndex, row.DataDirBytes = st.Storage.LastLogIndex, st.Storage.LastSnapshotIndex, st.Storage.DataDirBytes
	if st.Halted != nil {
		row.Halted = st.Halted.String()
	}
	if mf, err := a.metricsOf(ctx, base); err == nil {
		row.Version = labelOf(mf, "arbiter_build_info", "version")
		row.Revision = labelOf(mf, "arbiter_build_info", "revision")
		if v, ok := gauge(mf, "arbiter_snapshot_last_size_bytes"); ok {
			row.SnapshotBytes = int64(v)
		}
	}
	return row
}

func endpointStatusTable(w io.Writer, rows []endpointStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tID\tVERSION\tLEADER\tTERM\tCOMMIT\tAPPLIED\tSNAPSHOT INDEX\tSNAPSHOT SIZE\tDATA SIZE\tREACHABLE\tERROR")
	for _, r := range rows {
		if !r.Reachable {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\tfalse\t%s\n", r.Endpoint, r.Error)
			continue
		}
		leader := r.LeaderID
		if r.IsLeader {
			leader = "(this node)"
		}
		problem := r.Halted
		if problem != "" {
			problem = "halted: " + problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\ttrue\t%s\n", r.Endpoint, r.ID, orDash(r.Version), orDash(leader), r.Term, r.CommitIndex, r.AppliedIndex,
			r.LastSnapshotIndex, bytesText(r.SnapshotBytes), bytesText(r.DataDirBytes), orDash(problem))
	}
	return tw.Flush()
}

// bytesText is a size for people: 812 B, 1.5 MiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// endpointHealth is one node's /readyz answer.
type endpointHealth struct {
	Endpoint string `json:"endpoint"`
	Healthy  bool   `json:"healthy"`
	TookMs   int64  `json:"took_ms"`
	Error    string `json:"error,omitempty"`
}

func (a *app) endpointHealthCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health",
		Short: "whether each endpoint is ready: knows a leader, has caught up, enables what --require names",
		Long: `health asks each endpoint's /readyz: healthy means the node knows a leader,
has applied everything it knows to be committed and everything the leader had
committed when the node started, and has not halted. With --require, the
cluster must also enable every command it names (capacity.acquire,
workitem.submit@2, or a whole domain: projection): a missing one is an
incompatible deployment, and the error names it. It exits 1 unless every
endpoint is healthy. With --wait it asks again until they are,
or until the wait is over: run it after starting nodes, before the first
command that needs the cluster.

--cluster asks the members the cluster lists, and a node still joining is
not one of them yet: add --members N to wait, too, until it lists N.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	all := cmd.Flags().Bool("cluster", false, "ask every member of the cluster, not only --addr")
	members := cmd.Flags().Int("members", 0, "with --cluster: healthy only once the cluster lists at least this many members")
	wait := waitFlag(cmd.Flags())
	require := cmd.Flags().StringSlice("require", nil, "commands the caller needs the cluster to enable, as domain.command[@version] or domain (comma-separated or repeated)")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		if *members < 0 || *members > 0 && !*all {
			return usageErrorf("--members takes a count of members, with --cluster")
		}
		// --timeout, given, bounds the whole wait too (each probe is
		// bounded by it in any case).
		budget := *wait
		if cmd.Flags().Changed("timeout") {
			budget = min(budget, a.timeout)
		}
		deadline := time.Now().Add(budget)
		for {
			rows, err := a.health(*all, *require)
			healthy := err == nil && len(rows) > 0
			for _, r := range rows {
				healthy = healthy && r.Healthy
			}
			missing := err == nil && len(rows) < *members
			healthy = healthy && !missing
			if healthy || time.Now().After(deadline) {
				if err != nil {
					return err
				}
				if err := o.print(a.stdout, rows, func(w io.Writer) error { return healthTable(w, rows) }); err != nil {
					return err
				}
				if missing {
					return fmt.Errorf("the cluster lists %d members with an API address, fewer than --members %d (a node still joining is not a member yet)", len(rows), *members)
				}
				if !healthy {
					return errors.New("not every endpoint is healthy")
				}
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return cmd
}

// waitFlag is --wait[=DURATION]: --wait alone waits 30 s.
func waitFlag(fs *pflag.FlagSet) *time.Duration {
	d := fs.Duration("wait", 0, "ask again until every endpoint is healthy, for at most this long (--wait alone: 30s; each probe, and the whole wait when given, is bounded by --timeout)")
	fs.Lookup("wait").NoOptDefVal = "30s"
	return d
}

func (a *app) health(all bool, require []string) ([]endpointHealth, error) {
	ctx, cancel := a.context()
	defer cancel()
	bases, err := a.endpoints(ctx, all)
	if err != nil {
		return nil, err
	}
	rows := make([]endpointHealth, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows[i] = endpointHealth{Endpoint: base}
			c, err := a.nodeAPI(base)
			if err == nil {
				defer c.Close()
				pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
				defer pcancel()
				begin := time.Now()
				_, err = c.Cluster().Ready(pctx, require...)
				rows[i].TookMs = time.Since(begin).Milliseconds()
			}
			rows[i].Healthy = err == nil
			if err != nil {
				rows[i].Error = err.Error()
			}
		}()
	}
	wg.Wait()
	return rows, nil
}

func healthTable(w io.Writer, rows []endpointHealth) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tHEALTHY\tTOOK\tERROR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%v\t%dms\t%s\n", r.Endpoint, r.Healthy, r.TookMs, orDash(r.Error))
	}
	return tw.Flush()
}
