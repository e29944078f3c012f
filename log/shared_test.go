package log

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// Through a Strings, what repeats is one string (one list): the second
// read of a label, a list of labels or a property name shares the
// first's bytes, and reads what a Reader without one reads.
func TestStringsShareWhatRepeats(t *testing.T) {
	type row struct {
		Kind   string            `msgpack:"kind"`
		Labels []string          `msgpack:"labels"`
		Props  map[string]string `msgpack:"props"`
	}
	b := MustMarshal(&row{Kind: "node_create", Labels: []string{"a", "b"}, Props: map[string]string{"owner": "x"}})
	read := func(s *Strings) (kind string, labels []string, key string) {
		r := NewReader(b)
		r.Share(s)
		r.Map(func(k []byte) {
			switch string(k) {
			case "kind":
				kind = r.Repeated()
			case "labels":
				labels = r.RepeatedStrs()
			case "props":
				r.Entries(r.MapLen(), func(k string) { key = k; r.Str() })
			}
		})
		if !r.Done() {
			t.Fatalf("declined %x", b)
		}
		return kind, labels, key
	}
	kind0, labels0, key0 := read(nil)
	s := NewStrings()
	kind1, labels1, key1 := read(s)
	kind2, labels2, key2 := read(s)
	for _, got := range [][]any{{kind1, labels1, key1}, {kind2, labels2, key2}} {
		if got[0] != kind0 || !slices.Equal(got[1].([]string), labels0) || got[2] != key0 {
			t.Fatalf("read %v through a Strings, %v %v %v without", got, kind0, labels0, key0)
		}
	}
	if unsafe.StringData(kind1) != unsafe.StringData(kind2) || unsafe.StringData(key1) != unsafe.StringData(key2) {
		t.Fatal("a repeated string is a copy of its own")
	}
	if unsafe.SliceData(labels1) != unsafe.SliceData(labels2) {
		t.Fatal("a repeated list is a copy of its own")
	}
	if len(labels1) != cap(labels1) {
		t.Fatalf("a shared list has room (%d of %d) for an append to write into", len(labels1), cap(labels1))
	}
	if unsafe.StringData(kind0) == unsafe.StringData(kind1) {
		t.Fatal("a Reader without a Strings shared a string")
	}
}

// A Strings holds at most maxShared strings, maxSharedLists lists and
// nothing longer than maxSharedLen bytes: what it does not hold is read
// as a copy, equal all the same.
func TestStringsAreBounded(t *testing.T) {
	s := NewStrings()
	for i := range maxShared + 10 {
		want := fmt.Sprintf("label-%d", i)
		r := NewReader(MustMarshal(want))
		r.Share(s)
		if got := r.Repeated(); got != want || !r.Done() {
			t.Fatalf("read %q as %q", want, got)
		}
	}
	for i := range maxSharedLists + 10 {
		want := []string{fmt.Sprint(i)}
		r := NewReader(MustMarshal(want))
		r.Share(s)
		if got := r.RepeatedStrs(); !slices.Equal(got, want) || !r.Done() {
			t.Fatalf("read %q as %q", want, got)
		}
	}
	long := string(make([]byte, maxSharedLen+1))
	for range 2 {
		r := NewReader(MustMarshal(long))
		r.Share(s)
		if r.Repeated() != long {
			t.Fatal("a long string read wrong")
		}
	}
	if len(s.strs) != maxShared || len(s.lists) != maxSharedLists {
		t.Fatalf("holds %d strings and %d lists, bounds %d and %d", len(s.strs), len(s.lists), maxShared, maxSharedLists)
	}
}
