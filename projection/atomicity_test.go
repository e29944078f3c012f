package projection_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arbiterhq/arbiter/projection"
)

// A reader that parses current.json in a loop while hundreds of
// publications of very different sizes replace it never sees a torn or
// mixed file: every read is, byte for byte, one of the publications.
func TestReadersSeeWholePublications(t *testing.T) {
	e := newEnv(t)
	e.setTTL(60_000)
	id := e.target("atomic")
	path, err := projection.TargetPath(e.root, id)
	if err != nil {
		t.Fatal(err)
	}
	var (
		stop     atomic.Bool
		reads    atomic.Int64
		wg       sync.WaitGroup
		seen     = map[string]uint64{} // sha256 of each distinct read -> its publication_seq
		problems []string
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var lastSeq uint64
		for !stop.Load() {
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				problems = append(problems, err.Error())
				return
			}
			reads.Add(1)
			p, err := projection.ParsePublication(b)
			if err != nil {
				problems = append(problems, "torn: "+err.Error())
				continue
			}
			if p.PublicationSeq < lastSeq {
				problems = append(problems, "went backwards")
			}
			lastSeq = p.PublicationSeq
			sum := sha256.Sum256(b)
			seen[hex.EncodeToString(sum[:])] = p.PublicationSeq
		}
	}()
	published := map[string]uint64{}
	const n = 200
	for i := 0; i < n; i++ {
		// Envelopes from a few bytes to ~100 KiB, so a torn read of a
		// long file over a short one would not parse.
		body := strings.Repeat("p", (i*7919)%50_000)
		if _, err := e.submit(router, id, projection.ChannelComputedRoute, uint64(i+1), body); err != nil {
			t.Fatal(err)
		}
		l := e.acquire(id)
		res, err := e.s.Publish(as(agent), fenceOf(l))
		if err != nil {
			t.Fatal(err)
		}
		published[res.SHA256] = res.PublicationSeq
	}
	stop.Store(true)
	wg.Wait()
	// Every read is one of the publications, byte for byte.
	for sum, seq := range seen {
		if published[sum] != seq {
			problems = append(problems, fmt.Sprintf("a read of publication %d is not its bytes", seq))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("%d reads of %d were not whole publications: %v", len(problems), reads.Load(), problems[:min(5, len(problems))])
	}
	if reads.Load() < n/10 {
		t.Fatalf("only %d reads during %d publications", reads.Load(), n)
	}
	t.Logf("%d reads during %d publications", reads.Load(), n)
}
