package log_test

import (
	"fmt"

	"github.com/arbiterhq/arbiter/log"
)

// lease is a type on a hot path that writes its own msgpack.
type lease struct {
	Holder string `msgpack:"holder"`
	Fence  uint64 `msgpack:"fence"`
}

// AppendMsgpack writes the map's keys in canonical order: shorter
// first ("fence" before "holder").
func (l lease) AppendMsgpack(b []byte) ([]byte, error) {
	b = log.AppendMapLen(b, 2)
	b = log.AppendUint(log.AppendString(b, "fence"), l.Fence)
	return log.AppendString(log.AppendString(b, "holder"), l.Holder), nil
}

// An Appender writes exactly what reflection and the canonical pass
// write; CheckAppender is the property its tests assert.
func ExampleAppender() {
	l := lease{Holder: "worker-7", Fence: 300}
	fmt.Println(log.CheckAppender(l))
	b, _ := log.Marshal(l)
	fmt.Printf("%x\n", b)
	// Output:
	// <nil>
	// 82a566656e6365cd012ca6686f6c646572a8776f726b65722d37
}

// A direct decoder reads the canonical form with a Reader and declines
// anything else, which the reflective Unmarshal then decides.
func ExampleReader() {
	b, _ := log.Marshal(lease{Holder: "worker-7", Fence: 300})
	var l lease
	r := log.NewReader(b)
	r.Map(func(key []byte) {
		switch string(key) {
		case "fence":
			l.Fence = uint64(r.Int())
		case "holder":
			l.Holder = r.Str()
		default:
			r.Decline()
		}
	})
	fmt.Println(r.Done(), l.Holder, l.Fence)
	// Output: true worker-7 300
}
