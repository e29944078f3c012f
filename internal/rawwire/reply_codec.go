package rawwire

import arblog "github.com/arbiterhq/arbiter/log"

// AppendMsgpack writes the reply as arblog.MarshalReflective does, without
// reflection (the response's own encoder and, for an error, reflection on
// the error alone): every raw call and every forwarded write is answered
// with one. TestReplyAppendsWhatMarshalWrites compares them.
func (r Reply) AppendMsgpack(b []byte) ([]byte, error) {
	n := 0
	for _, set := range [...]bool{r.Err != nil, len(r.Result) > 0, r.Response != nil} {
		if set {
			n++
		}
	}
	b = arblog.AppendMapLen(b, n)
	// Keys in canonical order: all three letters long, so bytewise.
	if r.Err != nil {
		e, err := arblog.MarshalReflective(r.Err)
		if err != nil {
			return nil, err
		}
		b = append(append(b, 0xa3, 'e', 'r', 'r'), e...)
	}
	if len(r.Result) > 0 {
		b = arblog.AppendBin(append(b, 0xa3, 'o', 'u', 't'), r.Result)
	}
	if r.Response != nil {
		return r.Response.AppendMsgpack(append(b, 0xa3, 'r', 'e', 's'))
	}
	return b, nil
}
