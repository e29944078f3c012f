package log

import "github.com/arbiterhq/arbiter/identity"

// The envelope is encoded and decoded on every write: once by the
// proposer, once by Apply on each replica. Going through msgpack's
// reflection and then the canonical pass cost about a sixth of a create's
// apply, so Command has a direct codec here. It is not a second format:
//
//   - appendCommand writes exactly the bytes MarshalReflective(&c) writes (a
//     property test compares them for generated commands);
//   - decodeCommand accepts only that canonical form, and declines
//     (returns false) anything else, which then goes through the
//     reflective decoder as before: errors and edge cases keep their one
//     definition there. A fuzz test checks that whatever it accepts, the
//     reflective decoder accepts too, with an equal result.

// appendCommand appends c's canonical msgpack: a map whose keys are in
// ascending order of their encoded bytes (shorter fixstr keys first),
// empty omitempty fields left out, as the struct tags say.
func appendCommand(b []byte, c *Command) []byte {
	n := 5 // d, p, s, t, v always; a, ik, is when set
	for _, s := range [...]string{c.Adapter, c.IdemKey, c.IdemScope} {
		if s != "" {
			n++
		}
	}
	b = append(b, 0x80|byte(n))
	if c.Adapter != "" {
		b = AppendString(append(b, 0xa1, 'a'), c.Adapter)
	}
	b = AppendBin(append(b, 0xa1, 'd'), c.Payload)
	b = appendPrincipal(append(b, 0xa1, 'p'), &c.Principal)
	b = AppendInt(append(b, 0xa1, 's'), c.Stamp)
	b = AppendUint(append(b, 0xa1, 't'), uint64(c.Type))
	b = AppendUint(append(b, 0xa1, 'v'), uint64(c.Version))
	if c.IdemKey != "" {
		b = AppendString(append(b, 0xa2, 'i', 'k'), c.IdemKey)
	}
	if c.IdemScope != "" {
		b = AppendString(append(b, 0xa2, 'i', 's'), c.IdemScope)
	}
	return b
}

func appendPrincipal(b []byte, p *identity.Principal) []byte {
	n := 1
	if len(p.Roles) > 0 {
		n++
	}
	if len(p.Tenants) > 0 {
		n++
	}
	b = AppendString(append(b, 0x80|byte(n), 0xa2, 'i', 'd'), p.ID)
	if len(p.Roles) > 0 {
		b = AppendStrings(append(b, 0xa5, 'r', 'o', 'l', 'e', 's'), p.Roles)
	}
	if len(p.Tenants) > 0 {
		b = AppendStrings(append(b, 0xa7, 't', 'e', 'n', 'a', 'n', 't', 's'), p.Tenants)
	}
	return b
}

// decodeCommand decodes the canonical form appendCommand writes. It
// answers false, having decided nothing, for anything else: keys out of
// order or unknown, a nil payload, an empty principal list, a type or
// version that is not a shortest unsigned integer, trailing bytes.
func decodeCommand(b []byte, view bool) (Command, bool) {
	var c Command
	r := NewReader(b)
	r.Map(func(key []byte) {
		switch string(key) {
		case "a":
			c.Adapter = r.Str()
		case "d":
			if view {
				c.Payload = r.BinView()
			} else {
				c.Payload = r.Bin()
			}
		case "p":
			c.Principal = decodePrincipal(r)
		case "s":
			c.Stamp = r.Int()
		case "t":
			c.Type = Type(r.Uint16())
		case "v":
			c.Version = r.Uint16()
		case "ik":
			c.IdemKey = r.Str()
		case "is":
			c.IdemScope = r.Str()
		default:
			r.Decline()
		}
	})
	if !r.Done() {
		return Command{}, false
	}
	return c, true
}

func decodePrincipal(r *Reader) identity.Principal {
	var p identity.Principal
	r.Map(func(key []byte) {
		switch string(key) {
		case "id":
			p.ID = r.Str()
		case "roles":
			p.Roles = r.Strs()
		case "tenants":
			p.Tenants = r.Strs()
		default:
			r.Decline()
		}
	})
	return p
}
