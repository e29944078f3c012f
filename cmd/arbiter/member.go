package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/spf13/cobra"
)

// maxContact is how long the leader may go without an answer from a
// follower before member list calls the follower unhealthy: many
// heartbeats (raft sends several a second), well under an election.
const maxContact = 3.0 // seconds

func (a *app) memberCommand() *cobra.Command {
	return group("member", "list, add and remove the cluster's members, and move its leadership",
		`member list shows every member with its reachability, how far behind the
leader it is and when the leader last heard from it; member add and member
remove change the membership through the leader, and member transfer-leader
hands the leadership to another voter (admin role).`,
		a.memberListCommand(), a.memberAddCommand(), a.memberRemoveCommand(), a.memberTransferLeaderCommand())
}

// memberRow is one member as member list shows it.
type memberRow struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
	// Reachable: the member answered its own status within 3 s.
	Reachable bool `json:"reachable"`
	// Healthy: reachable, applying, following the cluster's leader, and
	// heard from by the leader within the last 3 s (Problem says why not).
	Healthy bool   `json:"healthy"`
	Problem string `json:"problem,omitempty"`
	// State, Term and AppliedIndex are the member's own answer.
	State        string `json:"state,omitempty"`
	Term         uint64 `json:"term,omitempty"`
	AppliedIndex uint64 `json:"applied_index,omitempty"`
	// LagEntries and LastContactSeconds are the leader's view (its
	// arbiter_raft_peer_* metrics): entries the member's log is behind,
	// seconds since it last answered. Null when the leader does not know.
	LagEntries         *int64   `json:"lag_entries"`
	LastContactSeconds *float64 `json:"last_contact_seconds"`
}

type memberList struct {
	ClusterID string      `json:"cluster_id"`
	LeaderID  string      `json:"leader_id"`
	Members   []memberRow `json:"members"`
}

func (a *app) memberListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "every member: voter, leader, reachable, healthy, lag and last contact",
		Long: `list asks any node for the membership, the leader for its view of each peer
(entries behind, seconds since it last answered: its arbiter_raft_peer_*
metrics) and each member for its own status, 3 s at most each. A member that
does not answer, has halted, follows another leader or has not answered the
leader for 3 s is not healthy, and the PROBLEM column says why. While the node
asked knows no leader (one restarted a moment ago may have applied nothing
yet), the next endpoint of --addr that knows one answers instead.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		ctx, cancel := a.context()
		defer cancel()
		list, err := a.members(ctx)
		if err != nil {
			return err
		}
		return o.print(a.stdout, list, func(w io.Writer) error { return memberTable(w, list) })
	}
	return cmd
}

// members joins the membership, the leader's view of its peers and each
// member's own answer.
func (a *app) members(ctx context.Context) (*memberList, error) {
	c, err := a.coreClient()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st, err := statusOf(ctx, c)
	if err != nil {
		return nil, err
	}
	if st.LeaderID == "" {
		// A node that knows no leader, such as one restarted a moment ago
		// and not yet contacted, may have applied none of its log: every
		// member would show without an API address. Another endpoint of
		// --addr that knows a leader answers instead.
		for _, base := range a.addrs() {
			if p := a.probe(ctx, base); p.status != nil && p.status.LeaderID != "" {
				st = p.status
				break
			}
		}
	}
	// The leader's configuration is the newest: a follower may not have
	// applied the last membership change yet.
	if st.LeaderID != "" && st.LeaderID != st.NodeID && st.LeaderAPIAddr != "" {
		if p := a.probe(ctx, a.memberBase(st.LeaderAPIAddr)); p.status != nil && p.status.NodeID == st.LeaderID {
			st = p.status
		}
	}
	bases := make([]string, len(st.Members))
	for i, m := range st.Members {
		bases[i] = a.memberBase(m.APIAddr)
	}
	probes := a.probeAll(ctx, bases)
	var contact, lag map[string]float64
	if st.LeaderAPIAddr != "" {
		if mf, err := a.metricsOf(ctx, a.memberBase(st.LeaderAPIAddr)); err == nil {
			contact = byLabel(mf, "arbiter_raft_peer_last_contact_seconds", "peer")
			lag = byLabel(mf, "arbiter_raft_peer_lag_entries", "peer")
		}
	}
	out := &memberList{ClusterID: st.ClusterID, LeaderID: st.LeaderID, Members: []memberRow{}}
	for i, m := range st.Members {
		row := memberRow{ID: m.ID, RaftAddr: m.RaftAddr, APIAddr: m.APIAddr, Voter: m.Voter, Leader: m.ID == st.LeaderID}
		p := probes[i]
		if p.status != nil {
			row.Reachable = true
			row.State, row.Term, row.AppliedIndex = p.status.State, p.status.Term, p.status.AppliedIndex
		}
		if row.Leader {
			zero, none := int64(0), 0.0
			row.LagEntries, row.LastContactSeconds = &zero, &none
		} else {
			if v, ok := lag[m.ID]; ok {
				n := int64(v)
				row.LagEntries = &n
			}
			if v, ok := contact[m.ID]; ok && v >= 0 {
				row.LastContactSeconds = &v
			}
		}
		row.Problem = memberProblem(row, p, st, contact != nil)
		row.Healthy = row.Problem == ""
		out.Members = append(out.Members, row)
	}
	return out, nil
}

// memberProblem says why a member is not healthy, or "".
func memberProblem(row memberRow, p nodeProbe, st *cluster.Status, leaderView bool) string {
	switch {
	case st.LeaderID == "":
		return "the cluster has no leader"
	case row.APIAddr == "":
		return "no API address registered"
	case p.status == nil:
		return fmt.Sprintf("unreachable: %v", p.err)
	case p.status.Halted != nil:
		return "halted: " + p.status.Halted.String()
	case p.status.LeaderID != st.LeaderID:
		return fmt.Sprintf("follows leader %q, not %s", p.status.LeaderID, st.LeaderID)
	case row.Leader || !leaderView:
		return ""
	case row.LastContactSeconds == nil:
		return "the leader has not heard from it"
	case *row.LastContactSeconds > maxContact:
		return fmt.Sprintf("the leader last heard from it %.1fs ago", *row.LastContactSeconds)
	}
	return ""
}

func memberTable(w io.Writer, l *memberList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT\tAPI\tROLE\tLEADER\tREACHABLE\tHEALTHY\tLAG\tLAST CONTACT\tAPPLIED\tPROBLEM")
	for _, m := range l.Members {
		r := "voter"
		if !m.Voter {
			r = "non-voter"
		}
		lag, contact := "?", "?"
		if m.LagEntries != nil {
			lag = strconv.FormatInt(*m.LagEntries, 10)
		}
		if m.LastContactSeconds != nil {
			contact = fmt.Sprintf("%.1fs", *m.LastContactSeconds)
		}
		applied := "-"
		if m.Reachable {
			applied = strconv.FormatUint(m.AppliedIndex, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\t%v\t%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, orDash(m.APIAddr), r, m.Leader, m.Reachable, m.Healthy, lag, contact, applied, orDash(m.Problem))
	}
	return tw.Flush()
}

func (a *app) memberAddCommand() *cobra.Command {
	var req client.JoinRequest
	cmd := &cobra.Command{
		Use:   "add ID --raft-addr HOST:PORT --api-addr HOST:PORT",
		Short: "add a member as a non-voter (promoted once it has caught up)",
		Long: `add asks the leader to add a member before it starts, as etcdctl member add
does; start it then with an empty data directory and --join (it finds itself
already added). It joins as a non-voter and the leader promotes it once it has
caught up, so a member that never starts never counts toward quorum.
POST /v1/cluster/join; the admin role.`,
		Args: exactArgs(1, "the member's id"),
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	cmd.Flags().StringVar(&req.RaftAddr, "raft-addr", "", "the member's raft address (its serve --raft-addr)")
	cmd.Flags().StringVar(&req.APIAddr, "api-addr", "", "the member's API address (its serve --http-addr)")
	cmd.Flags().BoolVar(&req.Replace, "replace", false, "the id is a member gone for good: remove it and add this one")
	_ = cmd.MarkFlagRequired("raft-addr")
	_ = cmd.MarkFlagRequired("api-addr")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		req.ID = args[0]
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		out, err := c.Cluster().Join(ctx, req)
		if err != nil {
			return err
		}
		return o.print(a.stdout, out, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "added %s as a non-voter; start it with an empty data directory:\n  arbiter serve --id %s --raft-addr %s --http-addr %s --join %s\n",
				req.ID, req.ID, req.RaftAddr, req.APIAddr, a.addrs()[0])
			return err
		})
	}
	return cmd
}

func (a *app) memberRemoveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "remove a member (a removed node stops)",
		Long: `remove asks the leader to remove a member: its metadata, then its vote.
Removing the leader makes it step down first. The removed node finds out and
exits; to come back it needs an empty data directory and --join.
POST /v1/cluster/remove; the admin role.`,
		Args: exactArgs(1, "the member's id"),
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		out, err := c.Cluster().Remove(ctx, args[0])
		if err != nil {
			return err
		}
		return o.print(a.stdout, out, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "removed %s\n", args[0])
			return err
		})
	}
	return cmd
}

func (a *app) memberTransferLeaderCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transfer-leader [--to ID]",
		Short: "hand the leadership to another voter (before maintenance of the leader's host)",
		Long: `transfer-leader asks the leader to hand its leadership over: to the voter
--to names, or without --to to the other voter raft finds most up to date
(etcdctl move-leader, consul operator raft transfer-leader). It prints the
leader after the transfer. A --to that is no member exits 1 (not found); a
non-voter, or a cluster with no other voter, exits 2. Asking for the leader
the cluster has already does nothing.
POST /v1/cluster/transfer-leader; the admin role.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	to := cmd.Flags().String("to", "", "the id of the voter to lead (default: the other voter raft picks)")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		out, err := c.Cluster().TransferLeader(ctx, *to)
		if err != nil {
			return err
		}
		return o.print(a.stdout, out, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "leader %s\n", out.LeaderID)
			return err
		})
	}
	return cmd
}
