// Command sustained is the sustained-write run of RELIABILITY.md: it
// starts three `arbiter serve` processes on loopback (fsync on, default
// retention), drives keyed compare-and-sets on a fixed set of nodes from
// many clients for a long time, and samples each process's RSS and the
// ledger and feed sizes. The state itself does not grow (the same nodes
// are overwritten), so every byte that does grow is retention the
// cluster failed to bound. It writes samples.csv, a plot (sustained.svg)
// and a summary.
//
//	go build -o /tmp/arbiter ./cmd/arbiter
//	go run ./bench/sustained -bin /tmp/arbiter -duration 30m -out /tmp/sustained
package main
