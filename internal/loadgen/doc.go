// Package loadgen drives an operation from N concurrent clients for a fixed
// time and reports throughput and latency percentiles. It is shared by
// `arbiter bench` and the etcd comparison so both are measured the same way.
package loadgen
