package log

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/identity"
)

// Type identifies a command. Zero is never a valid type. Ranges are reserved
// per package so that modules never collide (see fsm's package doc).
type Type uint16

// Command is the one envelope of every log entry Arbiter writes.
type Command struct {
	Type    Type   `msgpack:"t"`
	Version uint16 `msgpack:"v"`
	// Stamp is the FSM time, unix milliseconds, the leader proposes for the
	// command: the last FSM time plus the time elapsed on its monotonic
	// clock (see cluster's fsmClock). The FSM's clock is max(previous,
	// stamp).
	Stamp     int64              `msgpack:"s"`
	Principal identity.Principal `msgpack:"p"`
	// IdemScope and IdemKey, when IdemKey is set, key the idempotency ledger
	// (together with the principal, unless the command keys its ledger by
	// the tenant its scope names: see fsm.CommandSpec.LedgerTenant): a
	// second command with the same key and the same digest replays the
	// first result.
	IdemScope string `msgpack:"is,omitempty"`
	IdemKey   string `msgpack:"ik,omitempty"`
	// Adapter names the in-server adapter that proposed the command on
	// the principal's behalf after checking its tenant and role (for
	// example "authority" for concept reservations over the raw node
	// primitives). Only code inside a node sets it; the HTTP layer clears
	// it on everything a client sends.
	Adapter string `msgpack:"a,omitempty"`
	Payload []byte `msgpack:"d"`
}

// Bounds on the envelope.
const (
	// formatV1 is the first byte of every encoded command.
	formatV1 byte = 0xA1
	// MaxCommandBytes bounds an encoded command: the largest request a
	// domain accepts (4 MiB) plus room for the envelope
	// (a principal may list 256 tenants and roles of 512 bytes) and for
	// the difference between the request's JSON and its msgpack.
	MaxCommandBytes = 5 << 20
	// MaxKeyBytes bounds the idempotency key, principal id and each of
	// the principal's tenants and roles.
	MaxKeyBytes = 512
	// MaxScopeBytes bounds the idempotency scope: room for a whole tenant
	// (MaxKeyBytes) and what the scope names inside it, since a scope
	// that keys the ledger by tenant carries its tenant.
	MaxScopeBytes = 2 * MaxKeyBytes
	// MaxPrincipalList bounds a principal's tenants and roles.
	MaxPrincipalList = 256
)

// Encode returns the log bytes of c: a format byte, then canonical msgpack.
func Encode(c Command) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	out := appendCommand(make([]byte, 1, 64+len(c.Payload)), &c)
	out[0] = formatV1
	if len(out) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: command of %d bytes exceeds %d", ErrMalformed, len(out), MaxCommandBytes)
	}
	return out, nil
}

// Decode parses log bytes written by Encode. It never panics and never
// allocates beyond a small multiple of len(b).
func Decode(b []byte) (Command, error) { return decode(b, false) }

// DecodeView is Decode with the payload sharing b's bytes instead of a
// copy of them: for the FSM, which decodes every entry it applies once
// and keeps nothing of the payload past the apply (every module decodes
// its own values out of it), while raft never changes an entry's bytes.
// A caller must neither change b while it uses the command nor keep the
// payload longer than b.
func DecodeView(b []byte) (Command, error) { return decode(b, true) }

func decode(b []byte, view bool) (Command, error) {
	if len(b) == 0 {
		return Command{}, fmt.Errorf("%w: empty command", ErrMalformed)
	}
	if len(b) > MaxCommandBytes {
		return Command{}, fmt.Errorf("%w: command of %d bytes exceeds %d", ErrMalformed, len(b), MaxCommandBytes)
	}
	if b[0] != formatV1 {
		return Command{}, fmt.Errorf("%w: unknown command format 0x%02x", ErrMalformed, b[0])
	}
	c, ok := decodeCommand(b[1:], view)
	if !ok {
		var err error
		if c, err = decodeReflective(b[1:]); err != nil {
			return Command{}, err
		}
	}
	if err := c.check(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// decodeReflective decodes any form Unmarshal takes: the reference for
// decodeCommand, on its own so that Decode's result stays off the heap.
func decodeReflective(b []byte) (Command, error) {
	var c Command
	err := Unmarshal(b, &c)
	return c, err
}

func (c *Command) check() error {
	if c.Type == 0 {
		return fmt.Errorf("%w: command type 0", ErrMalformed)
	}
	if len(c.Principal.Tenants) > MaxPrincipalList || len(c.Principal.Roles) > MaxPrincipalList {
		return fmt.Errorf("%w: principal lists more than %d tenants or roles", ErrMalformed, MaxPrincipalList)
	}
	for _, list := range [...][]string{{c.Principal.ID, c.IdemKey, c.Adapter}, c.Principal.Tenants, c.Principal.Roles} {
		for _, s := range list {
			if len(s) > MaxKeyBytes || !utf8.ValidString(s) {
				return fmt.Errorf("%w: principal or idempotency field longer than %d bytes or not UTF-8", ErrMalformed, MaxKeyBytes)
			}
		}
	}
	if len(c.IdemScope) > MaxScopeBytes || !utf8.ValidString(c.IdemScope) {
		return fmt.Errorf("%w: idempotency scope longer than %d bytes or not UTF-8", ErrMalformed, MaxScopeBytes)
	}
	if c.IdemScope != "" && c.IdemKey == "" {
		return fmt.Errorf("%w: idempotency scope without a key", ErrMalformed)
	}
	return nil
}

// Digest identifies what a command asks for, independent of transport:
// SHA-256 over type, version, idempotency scope and payload. Two commands
// with the same idempotency key must have the same digest to replay.
func (c *Command) Digest() [32]byte {
	// The hashed bytes are built in one buffer, on the stack for a
	// command of common size, and hashed with Sum256: sha256.New's
	// hasher escapes to the heap (issue 42: every keyed write digests).
	var stack [512]byte
	b := binary.BigEndian.AppendUint16(stack[:0], uint16(c.Type))
	b = binary.BigEndian.AppendUint16(b, c.Version)
	b = appendLenPrefixed(b, []byte(c.IdemScope))
	b = appendLenPrefixed(b, c.Payload)
	return sha256.Sum256(b)
}

func appendLenPrefixed(b, data []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(data)))
	return append(b, data...)
}
