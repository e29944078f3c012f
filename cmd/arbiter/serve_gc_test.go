package main

import (
	"log/slog"
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

// --memory-limit takes GOMEMLIMIT's syntax (a whole number of bytes with
// an optional B, KiB, MiB, GiB or TiB); empty or 0 keeps Go's default,
// and a limit under minMemoryLimit is refused as a likely missing unit.
func TestParseMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"", 0}, {"0", 0}, {"0GiB", 0}, {"4GiB", 4 << 30}, {"2048MiB", 2 << 30}, {"1TiB", 1 << 40},
		{"65536KiB", 64 << 20}, {"16777216", 16 << 20}, {"16777216B", 16 << 20},
	} {
		got, err := parseMemoryLimit(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"4GB", "4G", "4 GiB", "-1GiB", "1.5GiB", "GiB", "off", "4", "1MiB", "9999999TiB", "99999999999999999999"} {
		if got, err := parseMemoryLimit(in); err == nil {
			t.Errorf("parseMemoryLimit(%q) = %d, want an error", in, got)
		}
	}
}

// serve sets Go's memory limit from --memory-limit, leaves it to
// GOMEMLIMIT when that is set (and says so), and refuses a limit it
// cannot read before it changes anything.
func TestServeMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil))

	setMemoryLimit(3<<30, "", logger)
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Fatalf("--memory-limit 3GiB set the limit to %d", got)
	}
	debug.SetMemoryLimit(prev)
	setMemoryLimit(0, "", logger)
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Fatalf("no --memory-limit changed the limit from %d to %d", prev, got)
	}
	if log.Len() != 0 {
		t.Fatalf("logged without GOMEMLIMIT: %s", log.String())
	}
	setMemoryLimit(3<<30, "1GiB", logger)
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Fatalf("with GOMEMLIMIT set, --memory-limit changed the limit to %d", got)
	}
	if !strings.Contains(log.String(), "GOMEMLIMIT") || !strings.Contains(log.String(), "--memory-limit") {
		t.Fatalf("GOMEMLIMIT overrode --memory-limit without a word: %q", log.String())
	}
	for _, bad := range []string{"4GB", "4"} {
		r := runCLI(t, nil, "", "serve", "--memory-limit", bad)
		if r.status != 2 || !strings.Contains(r.stderr, "--memory-limit") {
			t.Fatalf("serve --memory-limit %s: %+v", bad, r)
		}
		if got := debug.SetMemoryLimit(-1); got != prev {
			t.Fatalf("serve --memory-limit %s changed the limit to %d", bad, got)
		}
	}
}
