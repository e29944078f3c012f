package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
)

func (a *app) nodeWatchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch [--after SEQ]",
		Short: "print change-feed events, with the values written, as they happen",
		Long: `watch follows the change feed (GET /v1/changes with include_values,
through package client) and prints each event once, in order, as it arrives,
until interrupted (or --count events). Each node event carries the node as
it wrote it, or overwritten: true once a later change replaced it. When a
node goes away it resumes at its cursor through the next --addr. It starts
after the feed's newest event, or after --after SEQ (a SEQ printed earlier:
nothing is missed or repeated). It ends with an error when the feed no longer
holds the events after its cursor (cursor_expired: resync, then watch after
the last_seq it names). -o json prints one JSON object per line.`,
		Args: cobra.NoArgs,
	}
	o := a.nodeFlags(cmd)
	after := cmd.Flags().String("after", "", "the sequence to follow from (default: the feed's newest)")
	count := cmd.Flags().Int("count", 0, "stop after this many events (0: until interrupted)")
	noValues := cmd.Flags().Bool("no-values", false, "events without the values they wrote")
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var from uint64
		if *after != "" {
			if from, err = strconv.ParseUint(*after, 10, 64); err != nil {
				return usageErrorf("--after %q: want a sequence number", *after)
			}
		} else if from, err = a.lastSeq(ctx, c); err != nil {
			return err
		}
		q := client.ChangesQuery{After: from, Limit: client.MaxPage, Wait: watchWait, IncludeValues: !*noValues}
		if *stale {
			q.Consistency = client.Stale
		}
		if !o.json() {
			fmt.Fprintf(a.stdout, "%-8s %-8s %-24s %-22s %s\n", "SEQ", "INDEX", "TIME", "KIND", "KEY / VALUE")
		}
		seen := 0
		for ev, err := range c.Cluster().Follow(ctx, q) {
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return nil // interrupted
				}
				return err
			}
			if err := a.printEvent(o, ev); err != nil {
				return err
			}
			if seen++; *count > 0 && seen >= *count {
				return nil
			}
		}
		return nil
	}
	return cmd
}

// watchWait is how long one change-feed request waits for new events
// before it asks again.
const watchWait = 20 * time.Second

// detailUint reads an unsigned integer from an error's detail.
func detailUint(v any) (uint64, bool) {
	switch n := v.(type) {
	case json.Number:
		u, err := strconv.ParseUint(string(n), 10, 64)
		return u, err == nil
	case float64:
		return uint64(n), n >= 0 && n == float64(uint64(n))
	}
	return 0, false
}

// lastSeq is the sequence of the feed's newest event.
func (a *app) lastSeq(ctx context.Context, c *client.Client) (uint64, error) {
	page, err := c.Cluster().Changes(ctx, client.ChangesQuery{Limit: 1})
	var e *errs.Error
	if errors.As(err, &e) && e.Code == errs.CodeCursorExpired {
		if n, ok := detailUint(e.Detail["last_seq"]); ok {
			return n, nil
		}
	}
	if err != nil {
		return 0, err
	}
	return page.LastSeq, nil
}

func (a *app) printEvent(o output, ev client.Event) error {
	if o.json() {
		raw, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", raw)
		return err
	}
	what := ev.Key
	switch {
	case ev.Overwritten:
		what += " (overwritten)"
	case len(ev.Value) > 0:
		what += " " + string(ev.Value)
	case len(ev.Payload) > 0:
		what += " " + string(ev.Payload)
	}
	when := time.UnixMilli(ev.Time).UTC().Format("2006-01-02T15:04:05.000Z")
	_, err := fmt.Fprintf(a.stdout, "%-8d %-8d %-24s %-22s %s\n", ev.Seq, ev.Index, when, ev.Kind, what)
	return err
}
