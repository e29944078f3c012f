package statestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	memdb "github.com/hashicorp/go-memdb"
)

// Keyed is a go-memdb indexer together with a typed function that gives,
// without reflection, the key the indexer's FromObject gives a row. The
// store calls Key on every write (go-memdb's field indexers look the
// field up by name through reflection and allocate twice per row and
// index: a quarter of the time a snapshot restore took); queries still
// go to the indexer (FromArgs, PrefixFromArgs), so an index's keys and
// its lookups are go-memdb's. VerifyKeys checks that the two agree.
type Keyed struct {
	memdb.Indexer
	// Key is the row's key in the index, as FromObject gives it; ok is
	// false when the row has no value (FromObject's false).
	Key func(row any) (key string, ok bool, err error)
	// Arg, if set, is the key FromArgs gives args, for the arguments it
	// knows (ok); for any others the indexer's FromArgs answers, errors
	// included. A create looks its node up by id before it writes: the
	// indexer's FromArgs allocated twice for that.
	Arg func(args []any) (key string, ok bool)
	// terminated says the key for one string argument s is s + "\x00"
	// (StringField's): FirstString then looks it up without building a
	// string.
	terminated bool
}

// FromObject is the wrapped indexer's.
func (k *Keyed) FromObject(row any) (bool, []byte, error) {
	single, ok := k.Indexer.(memdb.SingleIndexer)
	if !ok {
		return false, nil, fmt.Errorf("statestore: keyed indexer %T is not a single-value indexer", k.Indexer)
	}
	return single.FromObject(row)
}

// PrefixFromArgs is the wrapped indexer's, if it has one.
func (k *Keyed) PrefixFromArgs(args ...any) ([]byte, error) {
	prefix, ok := k.Indexer.(memdb.PrefixIndexer)
	if !ok {
		return nil, fmt.Errorf("statestore: indexer %T does not support prefix lookups", k.Indexer)
	}
	return prefix.PrefixFromArgs(args...)
}

// StringField indexes rows of type *R by a string field: the keys of
// memdb.StringFieldIndex{Field: field}, where field names the field that
// of returns.
func StringField[R any](field string, of func(*R) string) *Keyed {
	return &Keyed{Indexer: &memdb.StringFieldIndex{Field: field}, Key: func(row any) (string, bool, error) {
		r, err := rowOf[R](row)
		if err != nil {
			return "", false, err
		}
		v := of(r)
		if v == "" {
			return "", false, nil // go-memdb: an empty string is no value
		}
		return v + "\x00", true, nil
	}, Arg: stringArg, terminated: true}
}

// stringArg is memdb.StringFieldIndex's FromArgs for its one form of
// arguments, a single string.
func stringArg(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	if !ok {
		return "", false
	}
	return s + "\x00", true
}

// StringFields indexes rows of type *R by two string fields: the keys of
// a memdb.CompoundIndex of two StringFieldIndexes (first and second name
// the fields that of returns), without AllowMissing.
func StringFields[R any](first, second string, of func(*R) (string, string)) *Keyed {
	return &Keyed{Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
		&memdb.StringFieldIndex{Field: first},
		&memdb.StringFieldIndex{Field: second},
	}}, Key: func(row any) (string, bool, error) {
		r, err := rowOf[R](row)
		if err != nil {
			return "", false, err
		}
		a, b := of(r)
		if a == "" || b == "" {
			return "", false, nil
		}
		return a + "\x00" + b + "\x00", true, nil
	}}
}

// Uint64Field indexes rows of type *R by a uint64 field: the keys of
// memdb.UintFieldIndex{Field: field} (eight bytes, big-endian).
func Uint64Field[R any](field string, of func(*R) uint64) *Keyed {
	return bigEndian(&memdb.UintFieldIndex{Field: field}, of)
}

// Int64Field indexes rows of type *R by an int64 field: the keys of
// memdb.IntFieldIndex{Field: field} (eight bytes, big-endian, the sign
// bit flipped so that keys sort as the numbers do).
func Int64Field[R any](field string, of func(*R) int64) *Keyed {
	return bigEndian(&memdb.IntFieldIndex{Field: field}, func(r *R) uint64 { return uint64(of(r)) ^ 1<<63 })
}

// bigEndian is an index whose key is of's eight bytes, big-endian.
func bigEndian[R any](indexer memdb.Indexer, of func(*R) uint64) *Keyed {
	return &Keyed{Indexer: indexer, Key: func(row any) (string, bool, error) {
		r, err := rowOf[R](row)
		if err != nil {
			return "", false, err
		}
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], of(r))
		return string(b[:]), true, nil
	}}
}

// Key builds a row's key in an index of several fields as go-memdb's
// CompoundIndex of field indexers (without AllowMissing) builds it: each
// string followed by a zero byte, each integer in eight big-endian
// bytes (a signed one with its sign bit flipped, so that keys sort as
// the numbers do). An empty string is no value: the row is then not in
// the index, as go-memdb leaves it out.
type Key struct {
	b       []byte
	missing bool
}

// String adds a string field.
func (k *Key) String(s string) {
	if s == "" {
		k.missing = true
		return
	}
	k.b = append(append(k.b, s...), 0)
}

// Uint64 adds a uint64 field (memdb.UintFieldIndex of a uint64).
func (k *Key) Uint64(v uint64) { k.b = binary.BigEndian.AppendUint64(k.b, v) }

// Int64 adds an int64 field (memdb.IntFieldIndex of an int64).
func (k *Key) Int64(v int64) { k.b = binary.BigEndian.AppendUint64(k.b, uint64(v)^1<<63) }

// Fields indexes rows of type *R by the fields key adds, in order, to a
// Key: indexer is the go-memdb indexer of the same fields, which
// lookups use (FromArgs, PrefixFromArgs). The module's tests check
// with VerifyKeys that the two give every row the same key.
func Fields[R any](indexer memdb.Indexer, key func(r *R, k *Key)) *Keyed {
	return &Keyed{Indexer: indexer, Key: func(row any) (string, bool, error) {
		r, err := rowOf[R](row)
		if err != nil {
			return "", false, err
		}
		var buf [96]byte
		k := Key{b: buf[:0]}
		key(r, &k)
		if k.missing {
			return "", false, nil
		}
		return string(k.b), true, nil
	}}
}

func rowOf[R any](row any) (*R, error) {
	r, ok := row.(*R)
	if !ok || r == nil {
		return nil, fmt.Errorf("statestore: row is %T, the index takes %T", row, (*R)(nil))
	}
	return r, nil
}

// VerifyKeys checks that every Keyed index of table gives each row the
// key its go-memdb indexer gives it. A module's tests call it with rows
// that cover its fields' edge cases (empty strings, zero and extreme
// numbers).
func VerifyKeys(table *memdb.TableSchema, rows ...any) error {
	for _, name := range slices.Sorted(maps.Keys(table.Indexes)) {
		k, ok := table.Indexes[name].Indexer.(*Keyed)
		if !ok {
			continue
		}
		for _, row := range rows {
			key, has, err := k.Key(row)
			wantHas, want, wantErr := k.FromObject(row)
			if (err != nil) != (wantErr != nil) || has != wantHas || has && !bytes.Equal([]byte(key), want) {
				return fmt.Errorf("statestore: table %s index %s, row %+v: Key gives %q, %t, %v; the indexer gives %q, %t, %v",
					table.Name, name, row, key, has, err, want, wantHas, wantErr)
			}
		}
	}
	return nil
}
