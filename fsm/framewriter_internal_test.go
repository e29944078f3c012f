package fsm

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"

	"pgregory.net/rapid"
)

// The frame writer's hashes, computed on their own goroutine from copied
// chunks, are those of the bytes it wrote, however the writes fall
// against the chunk size (pieces larger than a chunk included) and
// wherever the per-table hash changes.
func TestFrameWriterHashesWhatItWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var out bytes.Buffer
		stream, table1, table2 := sha256.New(), sha256.New(), sha256.New()
		fw := newFrameWriter(&out, stream)
		var all, in1, in2 []byte
		for i, n := 0, rapid.IntRange(0, 12).Draw(t, "pieces"); i < n; i++ {
			piece := bytes.Repeat([]byte{byte(i)}, rapid.SampledFrom([]int{0, 1, 5, 300, hashChunkBytes - 1, hashChunkBytes, 2*hashChunkBytes + 7}).Draw(t, "size"))
			switch rapid.IntRange(0, 3).Draw(t, "into") {
			case 0:
				fw.hashInto(nil)
			case 1:
				fw.hashInto(table1)
			case 2:
				fw.hashInto(io.MultiWriter(table1, table2))
			}
			fw.raw(piece)
			all = append(all, piece...)
			switch {
			case fw.also == table1:
				in1 = append(in1, piece...)
			case fw.also != nil:
				in1 = append(in1, piece...)
				in2 = append(in2, piece...)
			}
			if rapid.Bool().Draw(t, "settle") {
				fw.settle()
			}
		}
		fw.stop()
		fw.stop() // a second stop does nothing
		if !bytes.Equal(out.Bytes(), all) {
			t.Fatalf("wrote %d bytes, want %d", out.Len(), len(all))
		}
		for _, c := range []struct {
			name string
			got  []byte
			of   []byte
		}{{"stream", stream.Sum(nil), all}, {"table 1", table1.Sum(nil), in1}, {"table 2", table2.Sum(nil), in2}} {
			if want := sha256.Sum256(c.of); !bytes.Equal(c.got, want[:]) {
				t.Fatalf("%s hash is not the hash of its %d bytes", c.name, len(c.of))
			}
		}
	})
}
