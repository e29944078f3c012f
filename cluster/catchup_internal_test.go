package cluster

import "testing"

func TestTrailingLogsFor(t *testing.T) {
	const floor, ceiling = 10240, 2_000_000
	for _, c := range []struct {
		name  string
		rate  float64
		bytes int64
		speed float64
		want  uint64
	}{
		{"idle", 0, 1 << 30, 0, floor},
		{"small state, slow writes: the floor", 100, 1 << 20, 0, floor},
		// 8,000 writes a second, a 461 MB snapshot at the planned 16 MiB/s:
		// 2 x 28.8 s + 5 s of slack = 62.6 s of writes.
		{"a million records under full load", 8000, 461 << 20, 0, 501_000},
		{"a measured slower restore counts", 1000, 64 << 20, 4 << 20, 1000 * (2*16 + 5)},
		{"bounded", 1e6, 1 << 40, 0, ceiling},
	} {
		if got := trailingLogsFor(c.rate, c.bytes, c.speed, floor, ceiling); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
