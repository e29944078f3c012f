package chaos_test

import "github.com/arbiterhq/arbiter/internal/chaos"

// The workloads every fault runs against: one line per module.
var workloads = []chaos.Workload{
	chaos.Nodes{},
	chaos.NewConcepts(),
	chaos.NewCapacity(),
	chaos.NewAllocation(),
	chaos.NewWorkItems(),
	chaos.NewReservations(),
	chaos.NewFencedSink(true),
	chaos.NewProjection(),
}
