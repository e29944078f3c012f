package cluster

import arblog "github.com/arbiterhq/arbiter/log"

// AppendMsgpack writes the reply as arblog.MarshalReflective does, without
// reflection (the response's own encoder and, for an error, reflection on
// the error alone): every call through Remote and every forwarded write
// is answered with one. TestReplyAppendsWhatMarshalWrites compares them.
func (r wireReply) AppendMsgpack(b []byte) ([]byte, error) {
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

// AppendMsgpack writes the batch as arblog.MarshalReflective does: each
// follower's forwarded writes go to the leader as one.
func (a applyBatch) AppendMsgpack(b []byte) ([]byte, error) {
	b = append(b, 0x81, 0xa4, 'c', 'm', 'd', 's')
	if a.Commands == nil {
		return arblog.AppendNil(b), nil
	}
	b = arblog.AppendArrayLen(b, len(a.Commands))
	for _, c := range a.Commands {
		b = arblog.AppendBin(b, c)
	}
	return b, nil
}

// AppendMsgpack writes the replies as arblog.MarshalReflective does.
func (a applyBatchReply) AppendMsgpack(b []byte) ([]byte, error) {
	b = append(b, 0x81, 0xa7, 'r', 'e', 'p', 'l', 'i', 'e', 's')
	if a.Replies == nil {
		return arblog.AppendNil(b), nil
	}
	b = arblog.AppendArrayLen(b, len(a.Replies))
	var err error
	for _, r := range a.Replies {
		if b, err = r.AppendMsgpack(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}
