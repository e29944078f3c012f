package fsm

import (
	"runtime/metrics"
	"time"
)

// restoreStats is what one restore cost, for the line Restore logs: a
// restart's time is mostly the restore of its snapshot, and where that
// time goes (reading and hashing the stream, decoding, inserting, the
// collector) decides what to make faster.
type restoreStats struct {
	began time.Time
	gc    gcReading // at the start
	bytes int64     // of the stream, as read
	// insertBusy is the time the inserter spent inserting rows, and
	// insertWaited the time it waited for the next decoded batch: an
	// inserter that never waits is the restore's critical path.
	insertBusy, insertWaited time.Duration
}

// gcReading is the collector's work so far, process-wide (what other
// goroutines allocate meanwhile counts too).
type gcReading struct {
	cycles uint64
	cpu    float64 // seconds of CPU, the runtime's estimate
}

var gcSampleNames = [...]string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds"}

func readGC() gcReading {
	var s [len(gcSampleNames)]metrics.Sample
	for i, name := range gcSampleNames {
		s[i].Name = name
	}
	metrics.Read(s[:])
	var r gcReading
	if s[0].Value.Kind() == metrics.KindUint64 {
		r.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		r.cpu = s[1].Value.Float64()
	}
	return r
}

func startRestoreStats() *restoreStats {
	return &restoreStats{began: time.Now(), gc: readGC()}
}

// logAttrs are the stats as slog key-value pairs, ending now.
func (s *restoreStats) logAttrs() []any {
	gc := readGC()
	return []any{"bytes", s.bytes, "took", time.Since(s.began).Round(time.Millisecond),
		"insert_busy", s.insertBusy.Round(time.Millisecond), "insert_waited", s.insertWaited.Round(time.Millisecond),
		"gc_cycles", gc.cycles - s.gc.cycles, "gc_cpu_s", float64(int((gc.cpu-s.gc.cpu)*100)) / 100}
}
