// Command arbiter runs and inspects Arbiter nodes.
//
//	arbiter serve  [--id ID] [--data-dir DIR] [--raft-addr HOST:PORT] [--http-addr HOST:PORT]
//	               [--bootstrap [--restore FILE] | --join URL[,URL...] [--replace]] [--change-address]
//	               [--snapshot-threshold N] [--snapshot-interval DURATION] [--trailing-logs N] [--max-restore-bytes N]
//	               and each domain's flags (arbiter serve -h)
//	arbiter status [--addr URL]
//	arbiter bench  [--addrs URL[,URL...]] [--clients 1,16,64] [--duration 10s]
//	arbiter snapshot save --out FILE [--addr URL | --data-dir DIR] | inspect FILE | restore FILE [--addr URL]
//	arbiter recover --data-dir DIR --members FILE [--id ID]
//	arbiter principal [flags]
//	arbiter <domain command> ...   (concept, capacity, space, task: see arbiter help)
//
// With no flags, serve runs a single-node cluster in ./arbiter-data with
// raft on 127.0.0.1:7000 and the HTTP API on 127.0.0.1:8000, serving the
// built-in domains (package domain/builtin). With flags, a node with an
// empty data directory needs --bootstrap (a new cluster) or --join; a node
// with state resumes the membership its data directory records, and
// refuses to start with another --id, other addresses (unless
// --change-address), or a --join naming another cluster. A node removed
// from its cluster exits non-zero.
package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
)

// commands are the binary's own commands; each built-in domain may add
// one more (domain.CLI).
var commands = []struct {
	name, summary string
	run           func(args []string) error
}{
	{"serve", "run a node (arbiter serve -h for flags)", serve},
	{"status", "print a node's view of the cluster", status},
	{"bench", "measure create-if-absent throughput and latency against a cluster", bench},
	{"principal", "make a bearer token and the hash a principals file stores", principal},
	{"snapshot", "save, inspect and restore backups of the whole state (arbiter snapshot)", snapshotCmd},
	{"recover", "offline: make the survivors of a lost quorum a smaller cluster (arbiter recover -h)", recoverCmd},
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	if name == "help" || name == "-h" || name == "--help" {
		usage()
		return
	}
	found, err := run(name, args)
	if !found {
		fmt.Fprintf(os.Stderr, "arbiter: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "arbiter %s: %v\n", name, err)
		os.Exit(1)
	}
}

// run runs the command called name; found is false if there is none.
func run(name string, args []string) (found bool, err error) {
	for _, c := range commands {
		if c.name == name {
			return true, c.run(args)
		}
	}
	for _, d := range builtin.Domains() {
		for _, c := range d.CLIs() {
			if c.Name == name {
				env := domain.CLIEnv{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Connect: connectFlags}
				return true, c.Run(env, args)
			}
		}
	}
	return false, nil
}

func usage() {
	fmt.Fprint(os.Stderr, "usage: arbiter <command> [flags]\n\ncommands:\n")
	tw := tabwriter.NewWriter(os.Stderr, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	for _, d := range builtin.Domains() {
		for _, c := range d.CLIs() {
			fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Summary)
		}
	}
	_ = tw.Flush()
}
