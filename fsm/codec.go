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

// AppendMsgpack writes e as log.MarshalReflective does: every snapshot
// writes each event of the feed this way.
func (e *Event) AppendMsgpack(b []byte) ([]byte, error) {
	n := 5 // seq, index, time, kind, key; the rest when set
	for _, set := range [...]bool{e.Tenant != "", len(e.Payload) > 0, len(e.Value) > 0, e.Overwritten} {
		if set {
			n++
		}
	}
	b = log.AppendMapLen(b, n)
	// Keys in canonical order: shorter first, then bytewise.
	b = log.AppendString(append(b, 0xa3, 'k', 'e', 'y'), e.Key)
	b = log.AppendUint(append(b, 0xa3, 's', 'e', 'q'), e.Seq)
	b = log.AppendString(append(b, 0xa4, 'k', 'i', 'n', 'd'), e.Kind)
	b = log.AppendInt(append(b, 0xa4, 't', 'i', 'm', 'e'), e.Time)
	b = log.AppendUint(append(b, 0xa5, 'i', 'n', 'd', 'e', 'x'), e.Index)
	if len(e.Value) > 0 {
		b = log.AppendBin(log.AppendString(b, "value"), e.Value)
	}
	if e.Tenant != "" {
		b = log.AppendString(log.AppendString(b, "tenant"), e.Tenant)
	}
	if len(e.Payload) > 0 {
		b = log.AppendBin(log.AppendString(b, "payload"), e.Payload)
	}
	if e.Overwritten {
		b = log.AppendBool(log.AppendString(b, "overwritten"), true)
	}
	return b, nil
}

// DecodeDirect reads an event in the canonical form its AppendMsgpack
// writes (log.DirectDecoder), for restores and restarts;
// FuzzDecodeEventAgrees holds it to the reflective decoder.
func (e *Event) DecodeDirect(b []byte) bool { return e.DecodeSharing(b, nil) }

// DecodeSharing is DecodeDirect sharing kinds and tenants through shared
// (log.SharingDecoder).
func (e *Event) DecodeSharing(b []byte, shared *log.Strings) bool {
	var out Event
	r := log.NewReader(b)
	r.Share(shared)
	r.Map(func(key []byte) {
		switch string(key) {
		case "key":
			out.Key = r.Str()
		case "seq":
			out.Seq = r.Uint64()
		case "kind":
			out.Kind = r.Repeated()
		case "time":
			out.Time = r.Int()
		case "index":
			out.Index = r.Uint64()
		case "value":
			out.Value = r.Bin()
		case "tenant":
			out.Tenant = r.Repeated()
		case "payload":
			out.Payload = r.Bin()
		case "overwritten":
			out.Overwritten = r.Bool()
		default:
			r.Decline()
		}
	})
	if !r.Done() {
		return false
	}
	*e = out
	return true
}

// AppendMsgpack writes a ledger row as log.MarshalReflective does: every
// snapshot writes each row of the idempotency ledger (up to its
// retention, 250,000 rows by default), and through reflection and the
// canonical pass that was a snapshot's largest cost under keyed writes
// (profile of 2026-12-05). TestIdemRowAppendsWhatMarshalWrites holds the
// two to the same bytes.
func (r *idemRow) AppendMsgpack(b []byte) ([]byte, error) {
	b = log.AppendMapLen(b, 7)
	// Keys in canonical order: shorter first, then bytewise.
	b = log.AppendString(append(b, 0xa2, 'i', 'd'), r.ID)
	b = log.AppendString(append(b, 0xa3, 'k', 'e', 'y'), r.Key)
	b = log.AppendString(log.AppendString(b, "scope"), r.Scope)
	b = log.AppendBin(log.AppendString(b, "digest"), r.Digest[:])
	b, err := r.Response.AppendMsgpack(log.AppendString(b, "response"))
	if err != nil {
		return nil, err
	}
	b = log.AppendString(log.AppendString(b, "principal"), r.Principal)
	return log.AppendInt(log.AppendString(b, "created_at"), r.CreatedAt), nil
}
