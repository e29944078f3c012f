package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/spf13/cobra"
)

func (a *app) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "print one node's view of the cluster: leader, term, indexes, members, enabled commands",
		Long: `status prints the view of the first node that answers: its state, the leader,
term, commit and applied index, the enabled command set and the members as
raft's configuration holds them. It does not probe the members: member list
and endpoint health do.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
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
		st, err := statusOf(ctx, c)
		if err != nil {
			return err
		}
		return o.print(a.stdout, st, func(w io.Writer) error { return statusTable(w, st) })
	}
	return cmd
}

func statusTable(w io.Writer, st *cluster.Status) error {
	fmt.Fprintf(w, "cluster %s\n", orDash(st.ClusterID))
	fmt.Fprintf(w, "node %s is %s; leader %s (%s); term %d; commit %d; applied %d; auth %s\n",
		st.NodeID, st.State, orDash(st.LeaderID), orDash(st.LeaderAPIAddr), st.Term, st.CommitIndex, st.AppliedIndex, st.AuthMode)
	enabled := "none yet (the leader enables what every member serves)"
	if st.Gated {
		enabled = st.Enabled.String()
	}
	fmt.Fprintf(w, "enabled: %s\n", enabled)
	if st.Halted != nil {
		fmt.Fprintf(w, "HALTED: %s\n", st.Halted)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT\tAPI\tROLE\tSERVES")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, orDash(m.APIAddr), role(m.Voter), m.Serves)
	}
	return tw.Flush()
}

func role(voter bool) string {
	if voter {
		return "voter"
	}
	return "non-voter (until caught up)"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
