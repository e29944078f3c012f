package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
)

// hashkvAttempts bounds how many indexes hashkv tries: an index some
// replica applied inside a batch (or had passed) is skipped for a later one.
const hashkvAttempts = 5

// hashkvRow is one member's state hash at the index hashkv compared.
type hashkvRow struct {
	Endpoint string            `json:"endpoint"`
	Index    uint64            `json:"index,omitempty"`
	Hash     string            `json:"hash,omitempty"`
	Tables   map[string]string `json:"tables,omitempty"`
	Match    bool              `json:"match"`
	Differs  []string          `json:"differs,omitempty"` // tables whose hash is not the majority's
	Error    string            `json:"error,omitempty"`
}

func (a *app) endpointHashkvCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hashkv",
		Short: "every member's state hash at one log index: a cluster-wide consistency check",
		Long: `hashkv asks every member of the cluster for the hash of its whole state as of
one log index, the same on each (etcdctl endpoint hashkv), and compares them:
replicas that applied the same log hold the same state, so a difference is a
divergence (a bug, or a damaged data directory), named by table. The index is
the next one the cluster commits; one that a replica applied inside a batch
is skipped for a later one (at most 5). Equal hashes exit 0, a difference or
an unreachable member exits 1. GET /v1/cluster/state-hash?index=N on each
member; the admin role.`,
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
		bases, err := a.endpoints(ctx, true)
		if err != nil {
			return err
		}
		rows, err := a.hashkv(ctx, bases)
		if err != nil {
			return err
		}
		if err := o.print(a.stdout, rows, func(w io.Writer) error { return hashkvTable(w, rows) }); err != nil {
			return err
		}
		for _, r := range rows {
			switch {
			case r.Error != "":
				return fmt.Errorf("%s: %s", r.Endpoint, r.Error)
			case !r.Match:
				return fmt.Errorf("the replicas' states differ at index %d: %s holds other %s", r.Index, r.Endpoint, strings.Join(r.Differs, ", "))
			}
		}
		return nil
	}
	return cmd
}

// hashkv asks every base for its state hash at one index, trying later
// indexes while some replica cannot give one on its own.
func (a *app) hashkv(ctx context.Context, bases []string) ([]hashkvRow, error) {
	var after uint64
	for _, p := range a.probeAll(ctx, bases) {
		if p.err == nil {
			after = max(after, p.status.CommitIndex)
		}
	}
	for attempt := 0; attempt < hashkvAttempts; attempt++ {
		index := after + 1 // the next entry committed: each replica waits for it
		rows := make([]hashkvRow, len(bases))
		var wg sync.WaitGroup
		for i, base := range bases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rows[i] = a.hashAt(ctx, base, index)
			}()
		}
		wg.Wait()
		skipped := slices.ContainsFunc(rows, func(r hashkvRow) bool { return r.Index == 0 && r.Error == "" })
		if !skipped {
			compareHashes(rows)
			return rows, nil
		}
		after = index
	}
	return nil, errs.Errorf(errs.CodeUnavailable, "no index in %d that every replica could hash on its own (a busy cluster batches its entries): try again", hashkvAttempts)
}

// hashAt is base's state hash at index; a row with neither an index nor
// an error means the replica could not give one (applied in a batch).
func (a *app) hashAt(ctx context.Context, base string, index uint64) hashkvRow {
	row := hashkvRow{Endpoint: base}
	c, err := a.nodeAPI(base)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	defer c.Close()
	out, err := c.Cluster().StateHash(ctx, index)
	var e *errs.Error
	switch {
	case errors.As(err, &e) && e.Code == errs.CodeConflict:
		return row // skipped: no error, no index
	case err != nil:
		row.Error = err.Error()
	default:
		row.Index, row.Hash, row.Tables = out.Index, out.Hash, out.Tables
	}
	return row
}

// compareHashes marks each row that holds the hash most rows hold, and
// names the tables in which any other row differs from it.
func compareHashes(rows []hashkvRow) {
	count := map[string]int{}
	for _, r := range rows {
		if r.Error == "" {
			count[r.Hash]++
		}
	}
	var majority hashkvRow
	for _, r := range rows {
		if r.Error == "" && (majority.Hash == "" || count[r.Hash] > count[majority.Hash]) {
			majority = r
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.Error != "" {
			continue
		}
		r.Match = r.Hash == majority.Hash
		if r.Match {
			continue
		}
		for name, sum := range r.Tables { // order-free: sorted below
			if majority.Tables[name] != sum {
				r.Differs = append(r.Differs, name)
			}
		}
		for name := range majority.Tables { // order-free: sorted below
			if _, ok := r.Tables[name]; !ok {
				r.Differs = append(r.Differs, name)
			}
		}
		slices.Sort(r.Differs)
		if len(r.Differs) == 0 {
			r.Differs = []string{"state (no single table)"}
		}
	}
}

func hashkvTable(w io.Writer, rows []hashkvRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tINDEX\tHASH\tMATCH\tDIFFERS\tERROR")
	for _, r := range rows {
		hash := r.Hash
		if len(hash) > 16 {
			hash = hash[:16]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%s\t%s\n", r.Endpoint, r.Index, cell(hash), r.Match, cell(strings.Join(r.Differs, ",")), cell(r.Error))
	}
	return tw.Flush()
}
