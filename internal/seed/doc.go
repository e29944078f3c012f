// Package seed gives every randomized test its seed: from ARBITER_SEED
// when set (to replay a run), otherwise fresh, and printed when the test
// starts, so that a failure can be replayed with the same choices (fault
// order, workload choices; goroutine interleavings still vary).
package seed
