package log

// Strings shares the strings that repeat across the values one restore
// decodes (labels, property names, event kinds): a restore of a million
// nodes with one label made a million copies of it, and as many of each
// property name, a third of its allocations. Each distinct string it
// holds is allocated once, and every value that reads it shares it, as
// Go strings may be shared.
//
// It is bounded, because a stream's strings are not: it keeps at most
// maxShared strings and maxSharedLists lists, none longer than
// maxSharedLen bytes; once full, a string it does not hold is copied as
// Str copies it. A stream of distinct labels therefore costs a failed
// lookup per string, and a few hundred kilobytes at most.
//
// One Strings serves one goroutine at a time.
type Strings struct {
	strs  map[string]string
	lists map[string][]string // by the list's encoded bytes
}

// The bounds of a Strings: see there.
const (
	maxShared      = 1024
	maxSharedLists = 256
	maxSharedLen   = 64
)

// NewStrings is an empty Strings.
func NewStrings() *Strings {
	return &Strings{strs: make(map[string]string), lists: make(map[string][]string)}
}

// str is b as a string: the shared one, if s holds or takes it.
func (s *Strings) str(b []byte) string {
	if s == nil || len(b) > maxSharedLen {
		return string(b)
	}
	if have, ok := s.strs[string(b)]; ok { // string(b) here copies nothing
		return have
	}
	str := string(b)
	if len(s.strs) < maxShared {
		s.strs[str] = str
	}
	return str
}

// Share makes r read the strings its decoder marks as repeating (see
// Repeated, RepeatedStrs and Entries) through s, or copy each when s is
// nil, as a Reader does by default.
func (r *Reader) Share(s *Strings) { r.shared = s }

// Repeated reads a string, as Str does, that is likely to repeat across
// values (a label, an event's kind): shared through the Strings r was
// given, if any.
func (r *Reader) Repeated() string { return r.shared.str(r.strBytes(false)) }

// RepeatedStrs reads a list of strings, as Strs does, that is likely to
// repeat across values as a whole (a node's labels). Through a Strings,
// equal lists share one slice (its length its capacity, so that an
// append copies it): the caller must never change its elements.
func (r *Reader) RepeatedStrs() []string {
	s := r.shared
	if s == nil {
		return r.Strs()
	}
	start := r.pos
	for n := r.strsLen(); n > 0 && r.ok; n-- { // read over it: no copies yet
		r.strBytes(false)
	}
	if !r.ok {
		return nil
	}
	enc := r.b[start:r.pos]
	if have, ok := s.lists[string(enc)]; ok {
		return have
	}
	r.pos = start
	list := r.strs(s)
	if len(s.lists) < maxSharedLists && len(enc) <= maxSharedLen {
		s.lists[string(enc)] = list
	}
	return list
}
