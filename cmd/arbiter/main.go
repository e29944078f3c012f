// Command arbiter runs and inspects Arbiter nodes.
//
//	arbiter serve  [--id ID] [--data-dir DIR] [--raft-addr HOST:PORT] [--http-addr HOST:PORT] [--bootstrap] [--join URL[,URL...]]
//	               [--snapshot-threshold N] [--snapshot-interval DURATION] [--trailing-logs N] [--max-restore-bytes N]
//	arbiter status [--addr URL]
//	arbiter bench  [--addrs URL[,URL...]] [--clients 1,16,64] [--duration 10s]
//	arbiter concept reserve|reserve-next|transition|materialize|reconcile|get|list [flags]
//	arbiter capacity acquire|renew|release|reclaim|reconcile|status|cells [--json BODY]
//	arbiter snapshot save --out FILE | inspect FILE | restore FILE [--addr URL]
//
// With no flags, serve runs a single-node cluster in ./arbiter-data with
// raft on 127.0.0.1:7000 and the HTTP API on 127.0.0.1:8000.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "status":
		err = status(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "concept":
		err = concept(os.Args[2:])
	case "capacity":
		err = capacityCmd(os.Args[2:])
	case "principal":
		err = principal(os.Args[2:])
	case "snapshot":
		err = snapshotCmd(os.Args[2:])
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "arbiter: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "arbiter %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: arbiter <command> [flags]

commands:
  serve    run a node (arbiter serve -h for flags)
  status   print a node's view of the cluster
  bench    measure create-if-absent throughput and latency against a cluster
  concept  reserve and move concept ids (arbiter concept for its commands)
  capacity acquire, renew, release and inspect capacity leases (arbiter capacity)
  principal make a bearer token and the hash a principals file stores
  snapshot save, inspect and restore backups of the whole state (arbiter snapshot)
`)
}
