//go:build unix

package workitem_test

import "syscall"

// processCPU is the process's user and system CPU time in ns, every
// thread's (the garbage collector's too), for cpu-ns/op.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
