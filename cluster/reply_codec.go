package cluster

import arblog "github.com/arbiterhq/arbiter/log"

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
