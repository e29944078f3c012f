//go:build !unix

package loadgen

import "time"

// processCPU is not measured here: Result.ClientCPU stays 0.
func processCPU() (time.Duration, bool) { return 0, false }
