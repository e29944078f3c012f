package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) nodeCommand() *cobra.Command {
	return group("node", "create, read, compare-and-set, list and watch nodes (the first-writer primitives)",
		`node speaks the node primitives, as etcdctl put/get/txn/watch speak etcd's keys:

  node create ID     create-if-absent: exactly one caller ever creates an id
  node get ID        read a node (linearizable unless --stale)
  node cas ID        compare-and-set: every --if holds, then every --set applies, in one log entry
  node list --label  the nodes with a label, a page at a time (or --all)
  node watch         follow the change feed with the values written, until interrupted

Property values on the command line (--prop, --set, --if) are JSON when they
parse as JSON (2, true, null, "2", {"a":1}) and strings otherwise, so
--set owner=host-a and --set fence=2 do what they look like. Reading and
writing nodes directly needs the admin role on a cluster with principals.`,
		a.nodeCreateCommand(), a.nodeGetCommand(), a.nodeCASCommand(), a.nodeListCommand(), a.nodeWatchCommand())
}

// nodeFlags registers the flags every node command takes.
func (a *app) nodeFlags(cmd *cobra.Command) output {
	a.connFlags(cmd.Flags())
	return outputFlag(cmd.Flags(), "table")
}

// nodeClient is a client of the node primitives at --addr, and what
// closes it.
func (a *app) nodeClient() (*client.Nodes, func(), error) {
	c, err := a.coreClient()
	if err != nil {
		return nil, nil, err
	}
	return c.Nodes(), c.Close, nil
}

// jsonValue is a command-line value: JSON if it parses, else a string.
func jsonValue(s string) any {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if _, err := dec.Token(); err == io.EOF {
			return v
		}
	}
	return s
}

// keyValues parses k=v pairs of flag into a map (values by jsonValue).
func keyValues(flag string, pairs []string) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--%s %q: want FIELD=VALUE", flag, p)
		}
		if _, dup := out[k]; dup {
			return nil, usageErrorf("--%s: field %q given twice", flag, k)
		}
		out[k] = jsonValue(v)
	}
	return out, nil
}

// offsets parses field=milliseconds pairs (--set-now).
func offsets(pairs []string) (map[string]int64, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]int64{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		ms, err := strconv.ParseInt(v, 10, 64)
		if !ok || k == "" || err != nil {
			return nil, usageErrorf("--set-now %q: want FIELD=MILLISECONDS (0 for now)", p)
		}
		out[k] = ms
	}
	return out, nil
}

func (a *app) nodeCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create ID [--label L]... [--prop FIELD=VALUE]...",
		Short: "create a node if no node has its id; otherwise print the node that won",
		Long: `create asks for the node ID; exactly one caller ever creates an id, decided
by log order. Everyone else gets the node as the winner created it, and the
command exits 3. With --idempotency-key, a retry of an unknown outcome
returns this call's own result (replayed).`,
		Args: exactArgs(1, "the node's id"),
	}
	o := a.nodeFlags(cmd)
	labels := cmd.Flags().StringArray("label", nil, "a label (repeat for more)")
	props := cmd.Flags().StringArray("prop", nil, "a property FIELD=VALUE (repeat for more)")
	propsJSON := cmd.Flags().String("props", "", "the properties as one JSON object (with --prop, both apply)")
	setNow := cmd.Flags().StringArray("set-now", nil, "FIELD=MS: the field is set to the log's time plus MS milliseconds")
	setIndex := cmd.Flags().StringArray("set-index", nil, "FIELD: the field is set to the log index of the create, a fence that never goes backwards (repeat for more)")
	key := cmd.Flags().String("idempotency-key", "", "makes a retry return this call's own result")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		p, err := keyValues("prop", *props)
		if err != nil {
			return err
		}
		if *propsJSON != "" {
			var extra map[string]any
			dec := json.NewDecoder(strings.NewReader(*propsJSON))
			dec.UseNumber()
			if err := dec.Decode(&extra); err != nil {
				return usageErrorf("--props: not a JSON object: %v", err)
			}
			for k, v := range extra {
				if _, dup := p[k]; dup {
					return usageErrorf("--props and --prop both set %q", k)
				}
				p[k] = v
			}
		}
		now, err := offsets(*setNow)
		if err != nil {
			return err
		}
		nc, done, err := a.nodeClient()
		if err != nil {
			return err
		}
		defer done()
		ctx, cancel := a.context()
		defer cancel()
		res, err := nc.Create(ctx, client.CreateRequest{NodeID: args[0], Labels: *labels, Properties: p, SetNow: now,
			SetIndex: *setIndex, IdempotencyKey: *key})
		if err != nil {
			return err
		}
		if err := o.print(a.stdout, res, nil); err != nil {
			return err
		}
		if !res.Created {
			return notTaken{fmt.Sprintf("%s exists already (created at index %d): not created", args[0], res.Node.CreatedIndex)}
		}
		return nil
	}
	return cmd
}

func (a *app) nodeGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "read a node",
		Args:  exactArgs(1, "the node's id"),
	}
	o := a.nodeFlags(cmd)
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		nc, done, err := a.nodeClient()
		if err != nil {
			return err
		}
		defer done()
		ctx, cancel := a.context()
		defer cancel()
		n, err := nc.Get(ctx, args[0], consistency(*stale))
		if err != nil {
			return err
		}
		return o.print(a.stdout, n, nil)
	}
	return cmd
}

func staleFlag(fs *pflag.FlagSet) *bool {
	return fs.Bool("stale", false, "read the answering node's replica, without confirming with the leader")
}

func consistency(stale bool) client.Consistency {
	if stale {
		return client.Stale
	}
	return client.Linearizable
}

func (a *app) nodeCASCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cas ID [--if FIELD=VALUE]... [--set FIELD=VALUE]... [--unset FIELD]...",
		Short: "if every condition holds, apply every update, in one log entry",
		Long: `cas checks every condition (--if, --if-absent, --due, --not-due) and, only if
all hold, applies every update (--set, --unset, --set-now, --set-index,
--add-label, --remove-label) in one log entry, so a holder of a stale fence can never
overwrite a newer one. When a condition fails it prints the node as it is and
every check that failed (failed: field, check, reason) and exits 3.`,
		Args: exactArgs(1, "the node's id"),
	}
	o := a.nodeFlags(cmd)
	fs := cmd.Flags()
	ifs := fs.StringArray("if", nil, "condition FIELD=VALUE: the field holds this value (repeat for more)")
	absent := fs.StringArray("if-absent", nil, "condition: the field is absent")
	sets := fs.StringArray("set", nil, "update FIELD=VALUE (repeat for more)")
	unsets := fs.StringArray("unset", nil, "update: remove the field")
	setNow := fs.StringArray("set-now", nil, "update FIELD=MS: the log's time plus MS milliseconds")
	setIndex := fs.StringArray("set-index", nil, "update FIELD: the log index of this CAS, a fence that never goes backwards")
	due := fs.StringArray("due", nil, "condition: the field holds a time at or before the log's time")
	notDue := fs.StringArray("not-due", nil, "condition: the field holds a time after the log's time")
	addLabels := fs.StringArray("add-label", nil, "update: add a label")
	removeLabels := fs.StringArray("remove-label", nil, "update: remove a label")
	key := fs.String("idempotency-key", "", "makes a retry return this call's own result")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		cond, err := keyValues("if", *ifs)
		if err != nil {
			return err
		}
		for _, f := range *absent {
			if _, dup := cond[f]; dup {
				return usageErrorf("--if and --if-absent both name %q", f)
			}
			cond[f] = nil
		}
		upd, err := keyValues("set", *sets)
		if err != nil {
			return err
		}
		for _, f := range *unsets {
			if _, dup := upd[f]; dup {
				return usageErrorf("--set and --unset both name %q", f)
			}
			upd[f] = nil
		}
		now, err := offsets(*setNow)
		if err != nil {
			return err
		}
		if len(upd)+len(now)+len(*setIndex)+len(*addLabels)+len(*removeLabels) == 0 {
			// Refused before anything is sent, as the cluster would (422).
			return usageErrorf("updates is empty: give --set, --unset, --set-now, --set-index, --add-label or --remove-label")
		}
		nc, done, err := a.nodeClient()
		if err != nil {
			return err
		}
		defer done()
		ctx, cancel := a.context()
		defer cancel()
		req := client.CASRequest{NodeID: args[0], Conditions: cond, Updates: upd, IdempotencyKey: *key,
			SetNow: now, Due: *due, NotDue: *notDue, SetIndex: *setIndex,
			AddLabels: *addLabels, RemoveLabels: *removeLabels}
		res, err := nc.CAS(ctx, req)
		if err != nil {
			return err
		}
		if err := o.print(a.stdout, res, nil); err != nil {
			return err
		}
		if !res.Swapped {
			var why []string
			for _, f := range res.Failed {
				why = append(why, fmt.Sprintf("%s %s: %s", f.Field, f.Check, f.Reason))
			}
			sort.Strings(why)
			return notTaken{"not swapped: " + strings.Join(why, "; ")}
		}
		return nil
	}
	return cmd
}

func (a *app) nodeListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --label LABEL",
		Short: "the nodes with a label, a page at a time",
		Long: `list prints one page of the nodes with --label (at most --limit, 128 at
most) and the cursor of the next page, which --after takes; --all follows
the cursors to the last page.`,
		Args: cobra.NoArgs,
	}
	o := a.nodeFlags(cmd)
	label := cmd.Flags().String("label", "", "the label")
	after := cmd.Flags().String("after", "", "next_cursor of the page before")
	limit := cmd.Flags().Int("limit", 0, "page size, 1..128 (default 128)")
	all := cmd.Flags().Bool("all", false, "every page, as one list")
	stale := staleFlag(cmd.Flags())
	_ = cmd.MarkFlagRequired("label")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		nc, done, err := a.nodeClient()
		if err != nil {
			return err
		}
		defer done()
		ctx, cancel := a.context()
		defer cancel()
		q := client.PageQuery{After: *after, Limit: *limit, Consistency: consistency(*stale)}
		out := client.NodePage{Nodes: []client.Record{}}
		for { // a page at a time; the server bounds each (128)
			page, err := nc.ByLabel(ctx, *label, q)
			if err != nil {
				return err
			}
			out.Nodes = append(out.Nodes, page.Nodes...)
			out.NextCursor = page.NextCursor
			if !*all || page.NextCursor == "" {
				break
			}
			q.After = page.NextCursor
		}
		return o.print(a.stdout, out, func(w io.Writer) error { return nodeTable(w, out) })
	}
	return cmd
}

func nodeTable(w io.Writer, p client.NodePage) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE_ID\tVERSION\tMODIFIED_INDEX\tLABELS\tPROPERTIES")
	for _, n := range p.Nodes {
		props, _ := json.Marshal(n.Properties)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", n.NodeID, n.Version, n.ModifiedIndex, strings.Join(n.Labels, ","), props)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.NextCursor != "" {
		fmt.Fprintf(w, "next page: --after %s\n", p.NextCursor)
	}
	return nil
}
