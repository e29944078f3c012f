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

// The frame reader hands back every frame as written, and its sum is the
// hash of every byte it consumed, however the frames fall against its
// buffer: bodies that end on a chunk's edge, straddle it, are larger
// than exactFrameBytes (read through Read) or than the whole buffer,
// read from a source that answers a few bytes at a time.
func TestFrameReaderReadsWhatWasWritten(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var out bytes.Buffer
		fw := newFrameWriter(&out, sha256.New())
		var bodies [][]byte
		for i, n := 0, rapid.IntRange(0, 40).Draw(t, "frames"); i < n; i++ {
			size := rapid.SampledFrom([]int{0, 1, 5, 300, exactFrameBytes - 5, exactFrameBytes, exactFrameBytes + 1,
				readChunkBytes - 5, readChunkBytes + 3, 2*readChunkBytes + 7}).Draw(t, "size")
			body := bytes.Repeat([]byte{byte(i + 1)}, size)
			fw.body('R', body)
			bodies = append(bodies, body)
		}
		fw.stop()
		stream := out.Bytes()
		var src io.Reader = bytes.NewReader(stream)
		if rapid.Bool().Draw(t, "trickle") {
			src = iotestHalf{src}
		}
		fr := newFrameReader(src, sha256.New())
		var arena []byte
		if rapid.Bool().Draw(t, "arena") {
			arena = make([]byte, 0, rowArenaBytes)
		}
		for i, want := range bodies {
			kind, got, next, err := fr.nextIn(arena)
			arena = next
			if err != nil || kind != 'R' || !bytes.Equal(got, want) {
				t.Fatalf("frame %d: kind %q, %d bytes, %v; want %d bytes", i, kind, len(got), err, len(want))
			}
		}
		if sum, want := fr.sum(), sha256.Sum256(stream); sum != want {
			t.Fatalf("sum of %d bytes is not their hash", len(stream))
		}
		if _, _, err := fr.next(); err == nil {
			t.Fatal("a frame past the end of the stream")
		}
	})
}

// iotestHalf reads half of what is asked, at least a byte.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return h.r.Read(p[:(len(p)+1)/2])
}
