package fsm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Snapshot stream format, version 1:
//
//	magic "ARBSNAP" 0x01
//	frames: kind byte, uint32 big-endian length, msgpack body
//	  'H' snapHeader, once
//	  'T' table name (string), once per table that has rows, in name order
//	  'R' one row of the current table, in primary-key order
//	  'E' row count (uint64), once
//	trailer: SHA-256 of every byte before it
//
// Equal states give equal streams, so the stream's hash is the state hash.
// Empty tables are left out, so that replicas whose binaries know
// different domains (a rolling upgrade) give equal streams for equal
// states; a replica refuses a stream naming a table it does not know.

var snapMagic = []byte("ARBSNAP\x01")

const (
	snapFormat = 1
	// maxFrameBytes bounds one row: a row may hold a whole command's data,
	// and a ledger row a result as large as the command that made it,
	// with its envelope.
	maxFrameBytes = 4 * log.MaxCommandBytes
)

// ErrSnapshot is wrapped by every restore failure.
var ErrSnapshot = errors.New("fsm: bad snapshot")

type snapHeader struct {
	Format int      `msgpack:"format"`
	Index  uint64   `msgpack:"index"`
	Now    int64    `msgpack:"now"`
	Tables []string `msgpack:"tables"`
}

type fsmSnapshot struct {
	f   *FSM
	txn *statestore.Txn
}

// Snapshot captures the current state in O(1); Persist streams it. A
// halted replica refuses: raft would record the snapshot as covering
// entries the replica never applied.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if h := f.halted.Load(); h != nil {
		return nil, fmt.Errorf("fsm: no snapshot while halted: %s", h)
	}
	return &fsmSnapshot{f: f, txn: f.db.Load().Txn(false)}, nil
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriterSize(sink, 256<<10)
	if _, err := s.f.writeState(w, s.txn, false); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := w.Flush(); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// Hashes are two digests of one state.
type Hashes struct {
	// State is the snapshot stream's hash: everything, the applied index
	// and FSM time included. Replicas at the same index have the same.
	State [32]byte
	// Content hashes every table's rows except the FSM's bookkeeping row
	// (applied index, FSM time, feed counters, enabled set): equal before
	// and after a command that changed nothing, such as a refused one.
	Content [32]byte
	// Data is Content without the tables that describe the cluster
	// rather than what was written to it: its members and its change
	// feed. A restore keeps the restoring cluster's members and empties
	// the feed (see PrepareRestore) and keeps everything else as the
	// backup has it, so a restored state's Data equals the backup's
	// (SnapshotInfo.DataHash) until the next write.
	Data [32]byte
	// Tables hashes each non-empty table's rows on its own, so a
	// divergence between replicas names the table it is in (StateHashes
	// and StateHashesAt only; nil elsewhere).
	Tables map[string][32]byte
}

// clusterTables are the tables that are not data (Hashes.Data).
func clusterTable(name string) bool {
	return name == tableMeta || name == tableMembers || name == tableChanges
}

// StateHash returns the applied index and the SHA-256 of the state as of
// that index. Replicas at the same index must have the same hash.
func (f *FSM) StateHash() (uint64, [32]byte, error) {
	index, h, err := f.StateHashes()
	return index, h.State, err
}

// StateHashes is StateHash with the content hash.
func (f *FSM) StateHashes() (uint64, Hashes, error) {
	txn := f.db.Load().Txn(false)
	h, err := f.writeState(io.Discard, txn, true)
	return readMeta(txn).Index, h, err
}

// StateHashAt waits until the FSM reaches index and returns the SHA-256 of
// the state as of exactly that index. ok is false if the state at index
// was never visible on its own: the index was applied inside a larger
// batch, or had been passed before the call. Replicas keep applying while
// one is hashed, so comparing replicas at "the same index" needs this:
// StateHash on each would rarely catch them at the same one.
func (f *FSM) StateHashAt(ctx context.Context, index uint64) (sum [32]byte, ok bool, err error) {
	h, ok, err := f.StateHashesAt(ctx, index)
	return h.State, ok, err
}

// StateHashesAt is StateHashAt with the content hash.
func (f *FSM) StateHashesAt(ctx context.Context, index uint64) (h Hashes, ok bool, err error) {
	for {
		changed := f.Changed()
		txn := f.db.Load().Txn(false)
		switch at := readMeta(txn).Index; {
		case at == index:
			h, err = f.writeState(io.Discard, txn, true)
			return h, err == nil, err
		case at > index:
			return h, false, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return h, false, errs.Errorf(errs.CodeUnavailable, "waiting for index %d: %v", index, ctx.Err())
		}
	}
}

// WriteSnapshot streams the current state to w in the snapshot format.
func (f *FSM) WriteSnapshot(w io.Writer) error {
	_, err := f.writeState(w, f.db.Load().Txn(false), false)
	return err
}

// writeState writes the stream and its trailer, returning the trailer
// (the state hash) and the content hash; and, if perTable, each table's
// own hash (one more pass of SHA-256 over every row, which snapshots and
// backups do not pay).
func (f *FSM) writeState(w io.Writer, txn *statestore.Txn, perTable bool) (Hashes, error) {
	h, content, data := sha256.New(), sha256.New(), sha256.New()
	both := io.MultiWriter(content, data)
	// Frames are a few hundred bytes; written one by one to an HTTP
	// response (a 4 KiB buffer) a million-row stream made over a hundred
	// thousand system calls. (A state hash writes to io.Discard: no
	// buffer.)
	out, buf := w, (*bufio.Writer)(nil)
	if w != io.Discard {
		buf = bufio.NewWriterSize(w, 256<<10)
		out = buf
	}
	fw := newFrameWriter(out, h)
	defer fw.stop()
	fw.raw(snapMagic)
	m := readMeta(txn)
	hdr := snapHeader{Format: snapFormat, Index: m.Index, Now: m.Now}
	var tables []Table
	for _, t := range f.tables {
		if first, err := txn.First(t.Schema.Name, "id"); err != nil {
			return Hashes{}, fmt.Errorf("fsm: snapshot table %s: %w", t.Schema.Name, err)
		} else if first != nil {
			tables = append(tables, t)
			hdr.Tables = append(hdr.Tables, t.Schema.Name)
		}
	}
	fw.frame('H', hdr)
	var rows uint64
	var tableSums map[string][32]byte
	if perTable {
		tableSums = make(map[string][32]byte, len(tables))
	}
	for _, t := range tables {
		var th hash.Hash
		var also io.Writer
		switch {
		case t.Schema.Name == tableMeta:
		case clusterTable(t.Schema.Name):
			also = content
		default:
			also = both
		}
		if perTable {
			th = sha256.New()
			if also == nil {
				also = th
			} else {
				also = io.MultiWriter(th, also)
			}
		}
		fw.hashInto(also)
		fw.frame('T', t.Schema.Name)
		it, err := txn.Get(t.Schema.Name, "id")
		if err != nil {
			return Hashes{}, fmt.Errorf("fsm: snapshot table %s: %w", t.Schema.Name, err)
		}
		rows += fw.rows(it)
		if perTable {
			fw.settle()
			var sum [32]byte
			th.Sum(sum[:0])
			tableSums[t.Schema.Name] = sum
		}
	}
	fw.hashInto(nil)
	fw.frame('E', rows)
	fw.stop()
	sums := Hashes{Tables: tableSums}
	h.Sum(sums.State[:0])
	content.Sum(sums.Content[:0])
	data.Sum(sums.Data[:0])
	if fw.err == nil {
		_, fw.err = out.Write(sums.State[:])
	}
	if fw.err == nil && buf != nil {
		fw.err = buf.Flush()
	}
	return sums, fw.err
}

// frameWriter writes a stream's frames to w and hashes them on a
// goroutine of its own: a stream's hashes (the whole stream, then per
// table the content, data and table hashes) are three or four passes of
// SHA-256 over every byte, which on the writer's goroutine was about as
// much work as the writing itself. The bytes are copied into chunks of
// at most hashChunkBytes, at most hashChunksAhead of them waiting.
type frameWriter struct {
	w   io.Writer
	err error
	hdr [5]byte // the frame header being written

	h      io.Writer // every byte
	also   io.Writer // if set, the bytes of the current table too
	chunk  []byte
	chunks chan hashChunk
	free   chan []byte   // hashed chunks, to fill again
	hashed chan struct{} // closed when the hashing goroutine ends
	done   bool
}

const (
	hashChunkBytes  = 256 << 10
	hashChunksAhead = 4
)

// hashChunk is bytes to hash into h and also, or, with ack set, a
// barrier: ack is closed once everything before it is hashed.
type hashChunk struct {
	b    []byte
	also io.Writer
	ack  chan struct{}
}

func newFrameWriter(w, h io.Writer) *frameWriter {
	fw := &frameWriter{w: w, h: h, chunks: make(chan hashChunk, hashChunksAhead),
		free: make(chan []byte, hashChunksAhead+2), hashed: make(chan struct{})}
	go func() {
		defer close(fw.hashed)
		for c := range fw.chunks {
			if c.ack != nil {
				close(c.ack)
				continue
			}
			_, _ = h.Write(c.b) // a hash never fails to write
			if c.also != nil {
				_, _ = c.also.Write(c.b)
			}
			select {
			case fw.free <- c.b[:0]:
			default:
			}
		}
	}()
	return fw
}

func (fw *frameWriter) raw(b []byte) {
	if fw.err != nil {
		return
	}
	_, fw.err = fw.w.Write(b)
	if fw.chunk == nil {
		fw.chunk = fw.emptyChunk()
	}
	for len(b) > 0 { // a frame may be larger than a chunk
		n := min(len(b), cap(fw.chunk)-len(fw.chunk))
		fw.chunk = append(fw.chunk, b[:n]...)
		b = b[n:]
		if len(fw.chunk) == cap(fw.chunk) {
			fw.handOver()
		}
	}
}

// handOver passes the bytes copied so far to the hashing goroutine.
func (fw *frameWriter) handOver() {
	if len(fw.chunk) > 0 {
		fw.chunks <- hashChunk{b: fw.chunk, also: fw.also}
		fw.chunk = fw.emptyChunk()
	}
}

// emptyChunk is a hashed chunk to fill again, or a new one.
func (fw *frameWriter) emptyChunk() []byte {
	select {
	case b := <-fw.free:
		return b
	default:
		return make([]byte, 0, hashChunkBytes)
	}
}

// hashInto makes also, from the next byte on, receive the bytes the
// stream hash does (nil: none).
func (fw *frameWriter) hashInto(also io.Writer) {
	fw.handOver()
	fw.also = also
}

// settle waits until every byte written so far is hashed.
func (fw *frameWriter) settle() {
	fw.handOver()
	ack := make(chan struct{})
	fw.chunks <- hashChunk{ack: ack}
	<-ack
}

// stop hashes what is left and ends the hashing goroutine; the hashes
// are final once it returns. It may be called more than once.
func (fw *frameWriter) stop() {
	if fw.done {
		return
	}
	fw.done = true
	fw.handOver()
	close(fw.chunks)
	<-fw.hashed
}

func (fw *frameWriter) frame(kind byte, v any) {
	if fw.err != nil {
		return
	}
	body, err := encodeFrame(v)
	if err != nil {
		fw.err = err
		return
	}
	fw.body(kind, body)
}

// encodeFrame is the body of a frame that holds v.
func encodeFrame(v any) ([]byte, error) {
	return appendFrameBody(nil, v)
}

// appendFrameBody appends the body of a frame that holds v to b.
func appendFrameBody(b []byte, v any) ([]byte, error) {
	out, err := log.AppendMarshal(b, v)
	if err != nil {
		return b, fmt.Errorf("fsm: snapshot encode: %w", err)
	}
	if n := len(out) - len(b); n > maxFrameBytes {
		// A stream no replica could read back is refused here, not later.
		return b, fmt.Errorf("fsm: snapshot row of %d bytes exceeds %d", n, maxFrameBytes)
	}
	return out, nil
}

// body writes a frame of an encoded body.
func (fw *frameWriter) body(kind byte, body []byte) {
	if fw.err != nil {
		return
	}
	// In the writer, not on the stack: passed to an io.Writer, a local
	// array escapes, one allocation per row.
	fw.hdr[0] = kind
	binary.BigEndian.PutUint32(fw.hdr[1:], uint32(len(body)))
	fw.raw(fw.hdr[:])
	fw.raw(body)
}

// Restore replaces the whole state with a snapshot stream. The new state is
// built aside and swapped in only when the stream is complete and its hash
// checks, so a bad snapshot leaves the old state untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := f.readStateRelaxed(rc)
	if err != nil {
		return err
	}
	if prev := f.applied.Load(); st.hdr.Index < prev {
		// A replica is sent a snapshot only when it lags; one behind what
		// it applied moves it back in time (its local reads go stale, and
		// raft then replays entries it may have compacted away). It is
		// restored, as raft asks, but never silently.
		f.rewinds.Add(1)
		f.logger.Error("snapshot restore moves the applied index backwards", "from", prev, "to", st.hdr.Index)
	}
	f.install(st.db)
	f.applied.Store(st.hdr.Index)
	if h := f.halted.Swap(nil); h != nil {
		// The peers that applied what this replica could not made this
		// state: from here on it is theirs.
		f.logger.Warn("snapshot restore ends a halt", "halted_at", h.Index, "restored_index", st.hdr.Index)
	}
	f.broadcast()
	// What keyed effects did for the state replaced no longer counts;
	// the Restored hooks bring everything up to the new one.
	f.resetKeyedEffects()
	f.runRestored()
	f.keyed.at.Store(st.hdr.Index)
	f.broadcast()
	f.logger.Info("restored a snapshot", append([]any{"index", st.hdr.Index, "rows", st.rows}, st.stats.logAttrs()...)...)
	return nil
}

// runRestored runs every module's Restored hook on the new state.
func (f *FSM) runRestored() {
	if len(f.restored) == 0 {
		return
	}
	txn := f.db.Load().Txn(false)
	m := readMeta(txn)
	rt := &ReadTx{Now: m.Now, Index: m.Index, Txn: txn}
	for _, r := range f.restored {
		var effects []Effect
		if err := runEffect(Effect{Name: r.name + " restored", Run: func() error {
			effects = r.fn(rt)
			return nil
		}}); err != nil {
			f.effectFailed(r.name+" restored", m.Index, err)
		}
		f.runEffects(effects, m.Index)
	}
}

// Rewinds counts restores that moved the applied index backwards (see
// Restore); the fault harness requires none.
func (f *FSM) Rewinds() uint64 { return f.rewinds.Load() }

// loadedState is a snapshot stream read to its end and checked: the
// state it holds, built aside, and what it says about itself.
type loadedState struct {
	db     *statestore.DB
	hdr    snapHeader
	counts []TableRows // rows per table, in stream order
	rows   uint64
	sum    [32]byte // the trailer, which is the state hash
	stats  *restoreStats
}

// rowsOf is the number of rows the stream held for table.
func (st *loadedState) rowsOf(table string) uint64 {
	for _, c := range st.counts {
		if c.Name == table {
			return c.Rows
		}
	}
	return 0
}

func (f *FSM) readState(r io.Reader) (*loadedState, error) {
	fr := newFrameReader(r, sha256.New())
	if magic := fr.take(len(snapMagic)); magic == nil || !bytes.Equal(magic, snapMagic) {
		return nil, fmt.Errorf("%w: not an Arbiter snapshot (or unknown format)", ErrSnapshot)
	}
	st := &loadedState{stats: startRestoreStats()}
	defer func() { st.stats.bytes = fr.read }()
	hdr := &st.hdr
	if err := fr.expect('H', hdr); err != nil {
		return nil, err
	}
	if hdr.Format != snapFormat {
		return nil, fmt.Errorf("%w: unknown format %d", ErrSnapshot, hdr.Format)
	}
	db, err := statestore.NewDB(f.schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	txn := db.Txn(true)
	defer txn.Abort()
	load := startLoading(txn, st)
	if err := f.readTables(fr, hdr.Tables, load); err != nil {
		load.fail(err)
	}
	if err := load.wait(); err != nil {
		return nil, err
	}
	var count uint64
	if err := fr.expect('E', &count); err != nil {
		return nil, err
	}
	if count != st.rows {
		return nil, fmt.Errorf("%w: %d rows, trailer says %d", ErrSnapshot, st.rows, count)
	}
	if st.sum, err = checkTrailer(fr); err != nil {
		return nil, err
	}
	raw, _ := txn.First(tableMeta, "id", tableMeta)
	if raw == nil {
		return nil, fmt.Errorf("%w: no meta row", ErrSnapshot)
	}
	m := raw.(*meta)
	if m.Index != hdr.Index || m.Now != hdr.Now {
		return nil, fmt.Errorf("%w: header and meta row disagree", ErrSnapshot)
	}
	size := uint64(0)
	if m.countsLedgerBytes() {
		size = ledgerBytesOf(txn)
	}
	if ledger := st.rowsOf(tableIdem); m.LedgerRows != ledger || m.LedgerBytes != size {
		// Written before the ledger was counted (or its bytes): count it
		// now, alike on every replica that restores this stream.
		fixed := *m
		fixed.LedgerRows, fixed.LedgerBytes = ledger, size
		writeMeta(txn, &fixed)
	}
	txn.Commit()
	st.db = db
	return st, nil
}

// ledgerBytesOf sums ledgerRowBytes over the ledger's rows (at most its
// row cap; about 50 ns a row).
func ledgerBytesOf(txn *statestore.Txn) uint64 {
	it, err := txn.Get(tableIdem, "id")
	if err != nil {
		return 0
	}
	var n uint64
	for raw := it.Next(); raw != nil; raw = it.Next() {
		n += ledgerRowBytes(raw.(*idemRow))
	}
	return n
}

// checkTrailer reads the trailer and checks it against the hash of
// everything fr read before it; it returns the trailer.
func checkTrailer(fr *frameReader) ([32]byte, error) {
	want := fr.sum()
	var got [32]byte
	trailer := fr.take(len(got))
	if trailer == nil {
		return got, fmt.Errorf("%w: missing trailer", ErrSnapshot)
	}
	copy(got[:], trailer)
	if got != want {
		return got, fmt.Errorf("%w: checksum mismatch", ErrSnapshot)
	}
	n, err := fr.Read(make([]byte, 1))
	if n != 0 {
		return got, fmt.Errorf("%w: data after trailer", ErrSnapshot)
	}
	if err != nil && err != io.EOF {
		// A read error where the stream should end, or a source's own
		// check of what it handed out failing there: no stream to trust.
		return got, fmt.Errorf("%w: at the end of the stream: %v", ErrSnapshot, err)
	}
	return got, nil
}

func (f *FSM) table(name string) (Table, bool) {
	for _, t := range f.tables {
		if t.Schema.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

// frameReader reads frames; unread pushes back one frame so that the row
// loop can stop at the first frame that is not a row.
//
// It reads the stream in chunks of its own buffer and hashes what it
// consumes a chunk at a time: a restore of a million nodes reads six
// million headers and bodies, and each had gone through io.ReadFull, a
// TeeReader, bufio and a small hash write, a fifth of a restore's time.
type frameReader struct {
	src io.Reader
	h   hash.Hash // of every byte consumed, in order
	buf []byte    // buf[pos:end] read from src and not consumed yet
	pos int
	end int
	// hashed is how much of buf h has had: buf[hashed:pos] is consumed
	// but not yet hashed.
	hashed int

	pendingKind byte
	pendingBody []byte
	hasPending  bool

	read int64 // bytes read from src
}

// readChunkBytes is the buffer a frameReader reads into: larger than
// any frame it hands out as a view of it (exactFrameBytes).
const readChunkBytes = 256 << 10

func newFrameReader(src io.Reader, h hash.Hash) *frameReader {
	return &frameReader{src: src, h: h, buf: make([]byte, readChunkBytes)}
}

// hashConsumed brings h up to everything consumed so far.
func (fr *frameReader) hashConsumed() {
	fr.h.Write(fr.buf[fr.hashed:fr.pos])
	fr.hashed = fr.pos
}

// take consumes the next n bytes (n at most the buffer's size), as a
// view of the buffer, valid until the next read; nil if the stream ends
// first.
func (fr *frameReader) take(n int) []byte {
	if fr.end-fr.pos < n {
		fr.hashConsumed()
		fr.end = copy(fr.buf, fr.buf[fr.pos:fr.end])
		fr.pos, fr.hashed = 0, 0
		m, err := io.ReadAtLeast(fr.src, fr.buf[fr.end:], n-fr.end)
		fr.end += m
		fr.read += int64(m)
		if err != nil {
			return nil
		}
	}
	v := fr.buf[fr.pos : fr.pos+n : fr.pos+n]
	fr.pos += n
	return v
}

// Read consumes what is buffered, or reads a chunk first: the
// io.Reader a frame too large for the buffer is read through.
func (fr *frameReader) Read(p []byte) (int, error) {
	if fr.pos == fr.end && len(p) > 0 {
		fr.hashConsumed()
		fr.pos, fr.end, fr.hashed = 0, 0, 0
		m, err := fr.src.Read(fr.buf)
		fr.end = m
		fr.read += int64(m)
		if m == 0 {
			return 0, err
		}
	}
	n := copy(p, fr.buf[fr.pos:fr.end])
	fr.pos += n
	return n, nil
}

// sum is the hash of everything consumed so far.
func (fr *frameReader) sum() [32]byte {
	fr.hashConsumed()
	var sum [32]byte
	fr.h.Sum(sum[:0])
	return sum
}

func (fr *frameReader) next() (byte, []byte, error) {
	kind, body, _, err := fr.nextIn(nil)
	return kind, body, err
}

// nextIn is next, reading a body of up to exactFrameBytes into arena's
// spare capacity when it fits there (a restore's rows: one buffer per
// batch instead of one allocation per row). It answers arena grown by
// the body it holds; such a body is valid only while arena is not
// reused.
func (fr *frameReader) nextIn(arena []byte) (byte, []byte, []byte, error) {
	if fr.hasPending {
		fr.hasPending = false
		return fr.pendingKind, fr.pendingBody, arena, nil
	}
	hdr := fr.take(5)
	if hdr == nil {
		return 0, nil, arena, fmt.Errorf("%w: truncated frame header", ErrSnapshot)
	}
	kind, n := hdr[0], binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrameBytes {
		return 0, nil, arena, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrSnapshot, n, maxFrameBytes)
	}
	var body []byte
	var err error
	switch size := int(n); {
	case size <= exactFrameBytes:
		v := fr.take(size)
		if v == nil {
			return 0, nil, arena, fmt.Errorf("%w: truncated frame", ErrSnapshot)
		}
		if size <= cap(arena)-len(arena) {
			// Capped, so that nothing appended to one body reaches the
			// next.
			body = arena[len(arena) : len(arena)+size : len(arena)+size]
			arena = arena[:len(arena)+size]
			copy(body, v)
		} else {
			// Most frames are rows of a few hundred bytes: one
			// allocation of the size the header gives.
			body = append(make([]byte, 0, size), v...)
		}
	default:
		// Read what arrives rather than allocate what the header claims:
		// a truncated or hostile stream costs only the bytes it holds.
		body, err = io.ReadAll(io.LimitReader(fr, int64(n)))
	}
	if err != nil || uint32(len(body)) != n {
		return 0, nil, arena, fmt.Errorf("%w: truncated frame", ErrSnapshot)
	}
	return kind, body, arena, nil
}

// exactFrameBytes is the largest frame read into a buffer of the size its
// header claims; larger ones grow as their bytes arrive.
const exactFrameBytes = 64 << 10

func (fr *frameReader) unread(kind byte, body []byte) {
	fr.pendingKind, fr.pendingBody, fr.hasPending = kind, body, true
}

func (fr *frameReader) expect(kind byte, v any) error {
	k, body, err := fr.next()
	if err != nil {
		return err
	}
	if k != kind {
		return fmt.Errorf("%w: frame %q where %q was expected", ErrSnapshot, k, kind)
	}
	if err := log.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: frame %q: %v", ErrSnapshot, kind, err)
	}
	return nil
}

// ContentHash is the content hash of the current state (see Hashes): a
// refused command, a read, or a tick with nothing to expire or prune
// leave it as it was, so a test compares it before and after a refusal to
// prove that nothing changed.
func (f *FSM) ContentHash() ([32]byte, error) {
	_, h, err := f.StateHashes()
	return h.Content, err
}
