package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/arbiterhq/arbiter/cluster/offline"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/spf13/cobra"
)

// backupTimeout bounds a save or a restore: backups outgrow --timeout.
const backupTimeout = 30 * time.Minute

func (a *app) snapshotCommand() *cobra.Command {
	return group("snapshot", "save, inspect, restore and verify backups of the whole state",
		`Every snapshot command takes the backup file as its argument and reaches the
cluster with --addr or $ARBITER_ADDR:

  arbiter snapshot save FILE               back up the cluster's state (taken on the leader)
  arbiter snapshot save FILE --data-dir D  back up a stopped node's data directory, offline
  arbiter snapshot inspect FILE            check a backup offline and print what it holds
  arbiter snapshot restore FILE            replace the cluster's state with the backup
  arbiter snapshot verify FILE             check that the cluster holds the backup's data

save keeps FILE only once it reads back as a complete, checksummed backup.
restore rolls back everything but the cluster's members, index and clock:
writes after the backup are gone, fences and sequences go back, and every
change-feed cursor expires. All of them print counts and hashes, never rows.
On a terminal, save and restore show the bytes moved so far on stderr.
To start a new cluster from a backup: arbiter serve --bootstrap --restore FILE.`,
		a.snapshotSaveCommand(), a.snapshotInspectCommand(), a.snapshotRestoreCommand(), a.snapshotVerifyCommand())
}

// snapshotFlags are what every snapshot command takes.
func (a *app) snapshotFlags(cmd *cobra.Command) output {
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	return o
}

func (a *app) snapshotSaveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "back up the cluster's state into FILE (or, offline, a stopped node's)",
		Long: `save writes a backup of the cluster's state, taken on the leader through any
node, to FILE (mode 0600), keeping it only once it reads back as a complete
backup whose checksum holds. With --data-dir it needs no leader and no
network (like etcdutl snapshot save): it reads a stopped node's latest
snapshot and applies every entry of its log after it, entries the cluster may
not have committed included, and prints where the log ends.`,
		Args: cobra.MaximumNArgs(1),
	}
	o := a.snapshotFlags(cmd)
	out := cmd.Flags().String("out", "", "the backup file")
	deprecate(cmd.Flags(), "out", "give the file as the argument: arbiter snapshot save FILE")
	dataDir := cmd.Flags().String("data-dir", "", "save offline from this stopped node's data directory instead of a cluster")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		file := *out
		switch {
		case len(args) == 1 && file != "" && file != args[0]:
			return usageErrorf("save takes one file: %s or --out %s", args[0], file)
		case len(args) == 1:
			file = args[0]
		case file == "":
			return usageErrorf("save takes the backup FILE as its argument")
		}
		if *dataDir != "" {
			if cmd.Flags().Changed("addr") {
				return usageErrorf("save takes --addr (online, from the leader) or --data-dir (offline, from a stopped node), not both")
			}
			var saved *offline.OfflineBackup
			info, err := a.saveBackup(file, "saving", func(w io.Writer) (err error) {
				saved, err = offline.SaveOffline(*dataDir, builtin.Domains(), w)
				return err
			})
			if err != nil {
				return err
			}
			if !o.json() {
				fmt.Fprintf(a.stdout, "offline from %s: snapshot at index %d, then %d log entries to index %d\n",
					*dataDir, saved.SnapshotIndex, saved.Entries, saved.LastIndex)
			}
			return printInfo(a.stdout, o, info)
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := contextFor(backupTimeout)
		defer cancel()
		info, err := a.saveBackup(file, "saving", func(w io.Writer) error { return c.Cluster().Snapshot(ctx, w) })
		if err != nil {
			return err
		}
		return printInfo(a.stdout, o, info)
	}
	return cmd
}

func (a *app) snapshotInspectCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "check a backup offline: format, index, rows per table, state and data hash",
		Long: `inspect reads the whole backup and checks it as a restore would (format,
frames, every row, the checksum), then prints its index, FSM time, rows per
table, its state hash (the snapshot's own checksum) and its data hash: what a
cluster that restored it reports as data_hash in GET /v1/cluster/state-hash
(and what snapshot verify compares).`,
		Args: exactArgs(1, "the backup FILE"),
	}
	o := a.snapshotFlags(cmd)
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		info, err := inspectFile(args[0])
		if err != nil {
			return err
		}
		return printInfo(a.stdout, o, info)
	}
	return cmd
}

func (a *app) snapshotRestoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "replace the cluster's state with the backup in FILE",
		Long: `restore sends the backup to the leader, which checks all of it before it
changes anything and then replaces the state on every replica (a node that is
down installs it when it returns). The cluster keeps its own members and id,
its index and clock never go backwards, and every change-feed cursor expires;
everything else rolls back to the backup. Then snapshot verify FILE checks
that the cluster holds the backup's data. The admin role.

Fences derived from the log index (capacity, work items, projection, concept
fences once set_index is enabled, node fields written with --set-index) keep
rising across a restore into the cluster that took the backup. A backup of
another cluster that went on without it (lost, and restored here) needs
--bump-index N, N at least how far that cluster's log index went past the
backup's (its arbiter_raft_last_index, or the last index arbiter snapshot
save --data-dir reports from a surviving data directory, minus the backup's
index; bump generously when unsure), so that none of its fences is issued
again.`,
		Args: exactArgs(1, "the backup FILE"),
	}
	o := a.snapshotFlags(cmd)
	bump := cmd.Flags().Uint64("bump-index", 0, "move the log index this many entries past the larger of the backup's and the cluster's")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		opts := fsm.RestoreOptions{BumpIndex: *bump}
		if err := opts.CheckBump(); err != nil {
			return usageErrorf("--bump-index: %v", err)
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		var size int64
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		ctx, cancel := contextFor(backupTimeout)
		defer cancel()
		p := a.progress("restoring", size)
		res, err := c.Cluster().Restore(ctx, bufio.NewReaderSize(io.TeeReader(f, p), 256<<10), opts.BumpIndex)
		p.done()
		if err != nil {
			return err
		}
		return o.print(a.stdout, res, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "restored backup of index %d (state hash %s); the cluster resumed at index %d\n",
				res.Backup.Index, res.Backup.StateHash, res.Index)
			return err
		})
	}
	return cmd
}

// saveBackup writes the backup (with write) next to path, reads it back
// from disk and checks it, syncs it and only then renames it to path:
// path is either a complete backup or untouched.
func (a *app) saveBackup(path, verb string, write func(io.Writer) error) (*fsm.SnapshotInfo, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	p := a.progress(verb, 0)
	w := bufio.NewWriterSize(io.MultiWriter(tmp, p), 256<<10)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	p.done()
	if err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	info, err := inspectFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("the backup received is not valid, %s left as it was: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return info, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// inspectFile checks a backup with the tables of the built-in domains.
func inspectFile(path string) (*fsm.SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	checker, err := fsm.New(fsm.Config{Modules: domain.Modules(builtin.Domains())})
	if err != nil {
		return nil, err
	}
	return checker.InspectSnapshot(bufio.NewReaderSize(f, 256<<10))
}

func printInfo(w io.Writer, o output, info *fsm.SnapshotInfo) error {
	return o.print(w, info, func(w io.Writer) error {
		fmt.Fprintf(w, "format %d; index %d; fsm time %s; %d bytes; %d rows\nstate hash %s\ndata hash  %s\n",
			info.Format, info.Index, time.UnixMilli(info.FSMTimeMs).UTC().Format(time.RFC3339Nano), info.Bytes, info.Rows, info.StateHash, info.DataHash)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tROWS")
		for _, t := range info.Tables {
			fmt.Fprintf(tw, "%s\t%d\n", t.Name, t.Rows)
		}
		return tw.Flush()
	})
}
