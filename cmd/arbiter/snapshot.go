package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
)

const snapshotUsage = `usage: arbiter snapshot <command> [flags]

commands:
  save     --addr URL[,URL...] --out FILE   back up the cluster's state (taken on the leader)
  save     --data-dir DIR --out FILE        back up a stopped node's data directory, offline
  inspect  FILE                              check a backup offline and print what it holds
  restore  --addr URL[,URL...] FILE          replace the cluster's state with a backup

save keeps FILE only once it reads back as a complete, checksummed backup.
save --data-dir needs no leader: it writes the node's latest snapshot with
every entry of its log after it applied (entries the node held but the
cluster may not have committed included). To start a new cluster from a
backup: arbiter serve --bootstrap --restore FILE.
restore rolls back everything but the cluster's members, index and clock:
writes after the backup are gone, fences and sequences go back, and every
change-feed cursor expires. All three print counts and hashes, never rows.
`

func snapshotCmd(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, snapshotUsage)
		return errors.New("missing snapshot command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("snapshot "+cmd, flag.ContinueOnError)
	addr := fs.String("addr", "http://127.0.0.1:8000", "comma-separated API URLs of the cluster")
	out := fs.String("out", "", "file to write the backup to (save)")
	dataDir := fs.String("data-dir", "", "save offline from this stopped node's data directory instead of a cluster (save)")
	asJSON := fs.Bool("json", false, "print JSON")
	cf := addClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	switch cmd {
	case "save":
		if *out == "" || fs.NArg() != 0 {
			return errors.New("save takes --out FILE and no arguments")
		}
		if *dataDir != "" {
			addrGiven := false
			fs.Visit(func(f *flag.Flag) { addrGiven = addrGiven || f.Name == "addr" })
			if addrGiven {
				return errors.New("save takes --addr (online, from the leader) or --data-dir (offline, from a stopped node), not both")
			}
			var offline *cluster.OfflineBackup
			info, err := saveBackup(*out, func(w io.Writer) (err error) {
				offline, err = cluster.SaveOffline(*dataDir, builtin.Domains(), w)
				return err
			})
			if err != nil {
				return err
			}
			if !*asJSON {
				fmt.Printf("offline from %s: snapshot at index %d, then %d log entries to index %d\n",
					*dataDir, offline.SnapshotIndex, offline.Entries, offline.LastIndex)
			}
			return printInfo(info, *asJSON)
		}
		remote, err := cf.remote(*addr)
		if err != nil {
			return err
		}
		info, err := saveBackup(*out, func(w io.Writer) error { return remote.Snapshot(ctx, w) })
		if err != nil {
			return err
		}
		return printInfo(info, *asJSON)
	case "inspect":
		if fs.NArg() != 1 {
			return errors.New("inspect takes one FILE")
		}
		info, err := inspectFile(fs.Arg(0))
		if err != nil {
			return err
		}
		return printInfo(info, *asJSON)
	case "restore":
		if fs.NArg() != 1 {
			return errors.New("restore takes one FILE")
		}
		remote, err := cf.remote(*addr)
		if err != nil {
			return err
		}
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		res, err := remote.Restore(ctx, bufio.NewReaderSize(f, 256<<10))
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(res)
		}
		fmt.Printf("restored backup of index %d (state hash %s); the cluster resumed at index %d\n",
			res.Backup.Index, res.Backup.StateHash, res.Index)
		return nil
	}
	fmt.Fprint(os.Stderr, snapshotUsage)
	return fmt.Errorf("unknown snapshot command %q", cmd)
}

// saveBackup writes the backup (with write) next to path, reads it back
// from disk and checks it, syncs it and only then renames it to path:
// path is either a complete backup or untouched.
func saveBackup(path string, write func(io.Writer) error) (*fsm.SnapshotInfo, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 256<<10)
	if err := write(w); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
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
	return checker.InspectSnapshot(io.Reader(f))
}

func printInfo(info *fsm.SnapshotInfo, asJSON bool) error {
	if asJSON {
		return printJSON(info)
	}
	fmt.Printf("format %d; index %d; fsm time %s; %d bytes; %d rows\nstate hash %s\n",
		info.Format, info.Index, time.UnixMilli(info.FSMTimeMs).UTC().Format(time.RFC3339Nano), info.Bytes, info.Rows, info.StateHash)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tROWS")
	for _, t := range info.Tables {
		fmt.Fprintf(tw, "%s\t%d\n", t.Name, t.Rows)
	}
	return tw.Flush()
}
