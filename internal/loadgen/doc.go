// Package loadgen drives an operation from N concurrent clients for a fixed
// time and reports throughput and latency percentiles. It is shared by
// `arbiter bench` and the etcd comparison so both are measured the same way.
// An operation that must take an unmeasured step first in each call (a
// publish needs the lease it consumes) calls StartClock after it: its
// latency then counts from there, while throughput stays whole calls.
package loadgen
