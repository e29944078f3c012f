package fsm

import "github.com/arbiterhq/arbiter/log"

// AppendMsgpack writes r as log.MarshalReflective does, without
// reflection but for a domain error (rare, and free-form in its detail):
// every write's reply carries a Response. TestResponseAppendsWhatMarshalWrites
// holds the two to the same bytes.
func (r Response) AppendMsgpack(b []byte) ([]byte, error) {
	n := 2 // i and tm always; e, r and rp when set
	if r.Err != nil {
		n++
	}
	if len(r.Result) > 0 {
		n++
	}
	if r.Replayed {
		n++
	}
	b = log.AppendMapLen(b, n)
	// Keys in canonical order: shorter first, then bytewise.
	if r.Err != nil {
		e, err := log.MarshalReflective(r.Err)
		if err != nil {
			return nil, err
		}
		b = append(append(b, 0xa1, 'e'), e...)
	}
	b = log.AppendUint(append(b, 0xa1, 'i'), r.Index)
	if len(r.Result) > 0 {
		b = log.AppendBin(append(b, 0xa1, 'r'), r.Result)
	}
	if r.Replayed {
		b = log.AppendBool(append(b, 0xa2, 'r', 'p'), true)
	}
	return log.AppendInt(append(b, 0xa2, 't', 'm'), r.Time), nil
}
