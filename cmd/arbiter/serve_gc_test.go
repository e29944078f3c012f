package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// serve sets Go's GC target from --gc-percent, leaves it to GOGC when
// that is set, and refuses a target below 1.
func TestServeGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	setGCPercent(250, "")
	if got := debug.SetGCPercent(100); got != 250 {
		t.Fatalf("--gc-percent 250 set the target to %d", got)
	}
	setGCPercent(250, "80")
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, --gc-percent changed the target to %d", got)
	}
	if r := runCLI(t, nil, "", "serve", "--gc-percent", "0"); r.status != 2 || !strings.Contains(r.stderr, "--gc-percent") {
		t.Fatalf("serve --gc-percent 0: %+v", r)
	}
}
