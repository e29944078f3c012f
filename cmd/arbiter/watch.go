package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/spf13/cobra"
)

func (a *app) nodeWatchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch [--after SEQ]",
		Short: "print change-feed events, with the values written, as they happen",
		Long: `watch follows the change feed (cluster.Remote.Watch over GET /v1/changes
with include_values) and prints each event once, in order, as it arrives,
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
		remote, err := a.remote()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var from uint64
		if *after != "" {
			if from, err = strconv.ParseUint(*after, 10, 64); err != nil {
				return usageErrorf("--after %q: want a sequence number", *after)
			}
		} else if from, err = a.lastSeq(ctx, remote); err != nil {
			return err
		}
		opts := []rawremote.WatchOption{}
		if !*noValues {
			opts = append(opts, rawremote.WatchValues())
		}
		if *stale {
			opts = append(opts, rawremote.WatchStale())
		}
		if !o.json() {
			fmt.Fprintf(a.stdout, "%-8s %-8s %-24s %-22s %s\n", "SEQ", "INDEX", "TIME", "KIND", "KEY / VALUE")
		}
		seen := 0
		for ev, err := range remote.Watch(ctx, from, opts...) {
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

// lastSeq is the sequence of the feed's newest event.
func (a *app) lastSeq(ctx context.Context, remote *rawremote.Remote) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var page fsm.ChangesPage
	err := remote.CallJSON(ctx, http.MethodGet, "/v1/changes?after=0&limit=1", nil, &page)
	var e *errs.Error
	if errors.As(err, &e) && e.Code == errs.CodeCursorExpired {
		if n, ok := e.Detail["last_seq"].(json.Number); ok {
			return strconv.ParseUint(string(n), 10, 64)
		}
	}
	if err != nil {
		return 0, err
	}
	return page.LastSeq, nil
}

func (a *app) printEvent(o output, ev fsm.Event) error {
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
