package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"
)

func status(args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	addr := fs.String("addr", "http://127.0.0.1:8000", "API URL of any node")
	asJSON := fs.Bool("json", false, "print the raw JSON status")
	cf := addClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	remote, err := cf.remote(*addr)
	if err != nil {
		return err
	}
	st, err := remote.Status(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(st)
	}
	fmt.Printf("cluster %s\n", orDash(st.ClusterID))
	fmt.Printf("node %s is %s; leader %s (%s); term %d; commit %d; applied %d; auth %s\n",
		st.NodeID, st.State, orDash(st.LeaderID), orDash(st.LeaderAPIAddr), st.Term, st.CommitIndex, st.AppliedIndex, st.AuthMode)
	enabled := "none yet (the leader enables what every member serves)"
	if st.Gated {
		enabled = st.Enabled.String()
	}
	fmt.Printf("enabled: %s\n", enabled)
	if st.Halted != nil {
		fmt.Printf("HALTED: %s\n", st.Halted)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT\tAPI\tROLE\tSERVES")
	for _, m := range st.Members {
		role := "voter"
		if !m.Voter {
			role = "non-voter (until caught up)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, orDash(m.APIAddr), role, m.Serves)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
