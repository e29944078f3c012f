package fsmtest

import "runtime"

// LiveHeap is the heap in use after two collections: what a memory
// benchmark's state holds, the garbage of building it gone.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
