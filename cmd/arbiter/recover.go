package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/arbiterhq/arbiter/cluster/offline"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/spf13/cobra"
)

const recoverLong = `recover recovers a cluster that lost its quorum for good, offline, like
Consul's peers.json: it rewrites the stored configuration of the stopped node
in --data-dir so that the members listed in --members form a smaller
cluster, holding every entry the node's log holds. Then start the node with
its usual flags and join new members to it with --join (empty data
directories).

--members is a JSON file, an array of the members, this node among them:

  [{"id": "n1", "raft_addr": "10.0.0.1:7000"}]

(the "members" of arbiter status -o json, with the others taken out, will
do). Recover the survivor whose log goes furthest (arbiter snapshot save
--data-dir prints where a log ends); list several survivors, and recover
each with the same file, only if their logs end at the same index.

What it can lose: every entry that this node's log does not hold, even an
acknowledged one. What it may keep: an entry this node held that the old
cluster never committed. The lost members must never come back with their
old data directories: wipe them, or they may elect a leader of their own.
See docs/operations.md, "Quorum loss: recovery".`

// maxMembersFile bounds what is read of --members.
const maxMembersFile = 1 << 20

func (a *app) recoverCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recover --data-dir DIR --members FILE",
		Short: "offline: make the survivors of a lost quorum a smaller cluster",
		Long:  recoverLong,
		Args:  cobra.NoArgs,
	}
	dataDir := cmd.Flags().String("data-dir", "", "the stopped node's data directory")
	membersFile := cmd.Flags().String("members", "", "JSON file of the survivors: [{\"id\", \"raft_addr\"}]")
	id := cmd.Flags().String("id", "", "this node's id (default: as the data directory records)")
	_ = cmd.MarkFlagRequired("data-dir")
	_ = cmd.MarkFlagRequired("members")
	o := outputFlag(cmd.Flags(), "table")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		members, err := readMembers(*membersFile)
		if err != nil {
			return err
		}
		res, err := offline.Recover(offline.RecoverOptions{
			DataDir: *dataDir, ID: *id, Members: members, Domains: builtin.Domains(),
			Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return err
		}
		return o.print(a.stdout, res, func(w io.Writer) error {
			cid := res.ClusterID
			if cid == "" {
				cid = "(id not recorded)"
			}
			fmt.Fprintf(w, "recovered member %s of cluster %s\n", res.ID, cid)
			fmt.Fprintf(w, "configuration was: %s\n", describeMembers(res.Previous))
			fmt.Fprintf(w, "configuration now: %s\n", describeMembers(res.Members))
			fmt.Fprintf(w, "its log up to index %d (term %d) is the cluster's state from here on\n", res.Index, res.Term)
			_, err := fmt.Fprintln(w, "next: start it with its usual flags, then join new members (empty data directories) with --join")
			return err
		})
	}
	return cmd
}

// readMembers reads a members file: a JSON array of {id, raft_addr}
// (other fields, such as those of arbiter status --json, are ignored).
func readMembers(path string) ([]offline.RecoverMember, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--members: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxMembersFile+1))
	if err != nil {
		return nil, fmt.Errorf("--members: %w", err)
	}
	if len(raw) > maxMembersFile {
		return nil, fmt.Errorf("--members: %s is larger than %d bytes", path, maxMembersFile)
	}
	var members []offline.RecoverMember
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("--members: %s is not a JSON array of {\"id\", \"raft_addr\"}: %w", path, err)
	}
	return members, nil
}

func describeMembers(ms []offline.RecoverMember) string {
	if len(ms) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.ID + " at " + m.RaftAddr
	}
	return strings.Join(parts, ", ")
}
