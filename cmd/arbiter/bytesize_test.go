package main

import "testing"

// A size flag takes a number with or without a unit, prints what it
// holds in the largest unit that divides it, and refuses what is not a
// size, naming the flag.
func TestByteSizeFlag(t *testing.T) {
	var v uint64
	f := byteSize{"idempotency-max-bytes", &v}
	for _, c := range []struct {
		in   string
		want uint64
		out  string
	}{{"1MiB", 1 << 20, "1MiB"}, {"256MiB", 256 << 20, "256MiB"}, {"1048576", 1 << 20, "1MiB"}, {"1536KiB", 1536 << 10, "1536KiB"},
		{"2GiB", 2 << 30, "2GiB"}, {"1000", 1000, "1000"}, {"7B", 7, "7"}} {
		if err := f.Set(c.in); err != nil || v != c.want || f.String() != c.out {
			t.Errorf("Set(%q): %v, %d %q; want %d %q", c.in, err, v, f.String(), c.want, c.out)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "+1MiB", "1.5GiB", "1 MiB", "1mb", "9999999TiB"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) took it as %d", bad, v)
		}
	}
}
