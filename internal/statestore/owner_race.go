//go:build race

package statestore

import (
	"bytes"
	"runtime"
	"strconv"
)

// ownerCheck is on in race builds (every test run of CI): the goroutine
// that holds the write transaction is recorded, and a read transaction
// it begins panics instead of waiting for itself. Off elsewhere, where
// reading the goroutine's id on every transaction would cost too much.
const ownerCheck = true

// goroutineID is the calling goroutine's id, read from its stack header
// ("goroutine 42 [running]:"): the runtime exposes it nowhere else, and
// a race build only pays for it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _ = bytes.CutPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
