package fsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
)

// readTables reads the stream's tables, which the header announced,
// handing their rows to load in batches.
func (f *FSM) readTables(fr *frameReader, tables []string, load *loader) error {
	for i, name := range tables {
		if i > 0 && tables[i-1] >= name {
			return fmt.Errorf("%w: tables not in name order at %q", ErrSnapshot, name)
		}
		t, ok := f.table(name)
		if !ok {
			return fmt.Errorf("%w: unknown table %q (this binary does not serve the domain that owns it)", ErrSnapshot, name)
		}
		var got string
		if err := fr.expect('T', &got); err != nil {
			return err
		}
		if got != name {
			return fmt.Errorf("%w: table %q where %q was announced", ErrSnapshot, got, name)
		}
		load.table(name)
		b := load.batch(t)
		for {
			kind, body, arena, err := fr.nextIn(b.arena)
			b.arena = arena
			if err != nil {
				load.send(b)
				return err
			}
			if kind != 'R' {
				// Out of the arena, which the batch's decoder hands back
				// for reuse while the frame may still be pending.
				fr.unread(kind, bytes.Clone(body))
				break
			}
			b.bodies = append(b.bodies, body)
			if len(b.bodies) == rowBatchSize {
				if !load.send(b) {
					return nil // the loader failed: it has the error
				}
				b = load.batch(t)
			}
		}
		if !load.send(b) {
			return nil
		}
	}
	return nil
}

// rowBatchSize is how many rows a batch holds, and batchesAhead how many
// batches may be read ahead of the one being inserted: the bound on what
// a restore holds beyond the state it builds.
const (
	rowBatchSize = 256
	batchesAhead = 8
)

// rowArenaBytes is the buffer a batch reads its rows' frames into: 256
// rows of about 500 bytes. A row that no longer fits gets an allocation
// of its own, as every row did before: a restore of a million rows made
// a million bodies (the whole stream) for the collector, where it now
// reuses a dozen arenas.
const rowArenaBytes = 128 << 10

// A loader decodes rows on other goroutines while the stream is read and
// inserts them in stream order on one more, so a restore uses more than
// one core: decoding is half its work. The rows, the order they are
// inserted in and the first error in stream order are what reading,
// decoding and inserting one row after the other would give.
type loader struct {
	batches chan *rowBatch // in stream order; nil marks a failure
	failed  chan struct{}  // closed when the inserter stops on an error
	done    chan struct{}  // closed when the inserter has returned
	err     error          // the first error, set before done closes
	// arenas holds the arenas of decoded batches, for later batches to
	// read into: every decoder copies what it keeps out of a body (the
	// direct ones by construction, reflective msgpack because it reads
	// through an io.Reader), so a decoded batch's bodies are dead.
	arenas chan []byte
	// shared holds the Strings the decoders share repeated strings
	// through (log.SharingDecoder), one per decoding batch at a time: a
	// million rows with one label share one label string.
	shared chan *log.Strings
}

// rowBatch is consecutive rows of one table: their frames, and once
// decoded (decoded is closed), the rows or the error of the first row
// that did not decode.
type rowBatch struct {
	table   Table
	bodies  [][]byte // most in arena
	arena   []byte
	arenas  chan<- []byte // where arena goes once the rows are decoded
	shared  chan *log.Strings
	rows    []any
	err     error
	decoded chan struct{}
	// name starts a table: the inserter counts its rows from here.
	name string
}

func startLoading(txn *statestore.Txn, st *loadedState) *loader {
	l := &loader{batches: make(chan *rowBatch, batchesAhead), failed: make(chan struct{}), done: make(chan struct{}),
		arenas: make(chan []byte, batchesAhead+2), shared: make(chan *log.Strings, batchesAhead+2)}
	go l.insert(txn, st)
	return l
}

// table marks the start of a table's rows.
func (l *loader) table(name string) {
	l.send(&rowBatch{name: name})
}

// batch is an empty batch of t's rows, with an arena to read them into.
func (l *loader) batch(t Table) *rowBatch {
	b := &rowBatch{table: t, arenas: l.arenas, shared: l.shared}
	select {
	case b.arena = <-l.arenas:
	default:
		b.arena = make([]byte, 0, rowArenaBytes)
	}
	return b
}

// send queues b for decoding and insertion; false if the loader failed.
func (l *loader) send(b *rowBatch) bool {
	if b.name == "" && len(b.bodies) == 0 {
		return true
	}
	b.decoded = make(chan struct{})
	select {
	case l.batches <- b:
	case <-l.failed:
		return false
	}
	go b.decode()
	return true
}

func (b *rowBatch) decode() {
	defer close(b.decoded)
	b.rows = make([]any, 0, len(b.bodies))
	defer func() {
		// A decoder that panics on a hostile row must not take the
		// process down from a goroutine no caller can recover on.
		if r := recover(); r != nil {
			b.err = fmt.Errorf("%w: table %s row: decoder panicked: %v", ErrSnapshot, b.table.Schema.Name, r)
		}
	}()
	var shared *log.Strings
	select {
	case shared = <-b.shared:
	default:
		shared = log.NewStrings()
	}
	defer func() {
		select {
		case b.shared <- shared:
		default: // enough wait already
		}
	}()
	for _, body := range b.bodies {
		row := b.table.New()
		if d, ok := row.(log.SharingDecoder); ok && d.DecodeSharing(body, shared) {
			b.rows = append(b.rows, row)
			continue
		}
		if d, ok := row.(log.DirectDecoder); ok && d.DecodeDirect(body) {
			b.rows = append(b.rows, row)
			continue
		}
		if err := log.Unmarshal(body, row); err != nil {
			b.err = fmt.Errorf("%w: table %s row: %v", ErrSnapshot, b.table.Schema.Name, err)
			return
		}
		b.rows = append(b.rows, row)
	}
	b.bodies = nil
	if b.arenas != nil {
		select {
		case b.arenas <- b.arena[:0]:
		default: // enough arenas wait already
		}
	}
	b.arena = nil
}

// fail queues a read error after the batches read before it.
func (l *loader) fail(err error) {
	b := &rowBatch{err: err, decoded: make(chan struct{})}
	close(b.decoded)
	select {
	case l.batches <- b:
	case <-l.failed:
	}
}

// wait ends the stream of batches and returns the first error.
func (l *loader) wait() error {
	close(l.batches)
	<-l.done
	return l.err
}

func (l *loader) insert(txn *statestore.Txn, st *loadedState) {
	defer close(l.done)
	waitFrom := time.Now()
	for b := range l.batches {
		<-b.decoded
		busyFrom := time.Now()
		st.stats.insertWaited += busyFrom.Sub(waitFrom)
		if b.name != "" {
			st.counts = append(st.counts, TableRows{Name: b.name})
			waitFrom = time.Now()
			continue
		}
		for _, row := range b.rows {
			// A stream holds each table's rows in primary-key order
			// (writeState walks the "id" index), which Load appends
			// without searching; a stream in another order loads the
			// same state, only slower.
			if err := txn.Load(b.table.Schema.Name, row); err != nil {
				b.err = fmt.Errorf("%w: table %s row: %v", ErrSnapshot, b.table.Schema.Name, err)
				break
			}
			st.counts[len(st.counts)-1].Rows++
			st.rows++
		}
		if b.err != nil {
			l.err = b.err
			close(l.failed)
			for b := range l.batches {
				<-b.decoded // let the decoders end before the caller moves on
			}
			return
		}
		waitFrom = time.Now()
		st.stats.insertBusy += waitFrom.Sub(busyFrom)
	}
}

// rows writes a row frame for every row it yields and returns how many
// it wrote. Encoding is most of a snapshot's work: one goroutine walks
// the index and hands out batches of rows, each batch is encoded on its
// own goroutine, and the frames are written here in index order, at most
// batchesAhead batches behind the walk. The bytes are those of encoding
// one row after the other; the first error in index order is the one
// kept.
//
// A batch encodes its rows into one buffer, and a written batch is
// handed back to be filled again: a stream of a million rows reuses a
// dozen buffers instead of leaving a million bodies (its whole size) to
// the collector, which under a memory limit near the live heap ran
// without pause for as long as the stream did.
func (fw *frameWriter) rows(it interface{ Next() any }) uint64 {
	queue := make(chan *encodeBatch, batchesAhead)
	free := make(chan *encodeBatch, batchesAhead+2)
	stop := make(chan struct{})
	go func() {
		defer close(queue)
		for {
			b := reuseBatch(free)
			for raw := it.Next(); raw != nil; raw = it.Next() {
				if b.rows = append(b.rows, raw); len(b.rows) == rowBatchSize {
					break
				}
			}
			if len(b.rows) == 0 {
				return
			}
			select {
			case queue <- b:
			case <-stop:
				return
			}
			go b.encode()
			if len(b.rows) < rowBatchSize {
				return
			}
		}
	}()
	var n uint64
	stopped := false
	for b := range queue {
		<-b.encoded
		if fw.err == nil && b.err != nil {
			fw.err = b.err
		}
		if fw.err != nil {
			if !stopped {
				close(stop)
				stopped = true
			}
			continue // drain what was queued
		}
		start := 0
		for _, end := range b.ends {
			fw.body('R', b.buf[start:end])
			start = end
			n++
		}
		if cap(b.buf) <= maxReusedBatchBytes {
			select {
			case free <- b:
			default:
			}
		}
	}
	return n
}

// maxReusedBatchBytes is the largest batch buffer handed back for reuse:
// rows are a few hundred bytes, and the rare batch of large rows is not
// worth keeping.
const maxReusedBatchBytes = 1 << 20

// encodeBatch is consecutive rows of one index and, once encoded is
// closed, their frame bodies one after the other in buf (body i ends at
// ends[i]), or the error of the first that failed.
type encodeBatch struct {
	rows    []any
	buf     []byte
	ends    []int
	err     error
	encoded chan struct{}
}

// reuseBatch is an empty batch: a written one from free, or a new one.
func reuseBatch(free chan *encodeBatch) *encodeBatch {
	select {
	case b := <-free:
		clear(b.rows) // no hold on rows a later state dropped
		b.rows, b.buf, b.ends = b.rows[:0], b.buf[:0], b.ends[:0]
		b.encoded = make(chan struct{})
		return b
	default:
		return &encodeBatch{rows: make([]any, 0, rowBatchSize), ends: make([]int, 0, rowBatchSize), encoded: make(chan struct{})}
	}
}

func (b *encodeBatch) encode() {
	defer close(b.encoded)
	defer func() {
		if r := recover(); r != nil {
			b.err = fmt.Errorf("fsm: snapshot encode: encoder panicked: %v", r)
		}
	}()
	for _, row := range b.rows {
		var err error
		if b.buf, err = appendFrameBody(b.buf, row); err != nil {
			b.err = err
			return
		}
		b.ends = append(b.ends, len(b.buf))
	}
}
