package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// checkDuplicateKeys refuses an object, at any depth, that names a key
// twice (after unescaping: "a" and "\u0061" are the same key). raw must
// be one valid JSON value (json.Valid): the scanner trusts the grammar
// and only tracks where objects, arrays, keys and values begin and end.
//
// It is on the path of every JSON request, so the common body costs no
// allocation: the open objects and arrays, and the keys of the open
// objects, live in fixed arrays on the stack (they spill to the heap only
// past 16 levels or 64 keys), keys are compared as the body's own bytes,
// and an object compares each new key with its earlier ones until it
// holds maxLinearKeys, after which it indexes them in a map, so time stays
// linear in the input whatever the object's size. A key with an escape is
// unescaped (allocating); the path of the offending object is built only
// for the error.
func checkDuplicateKeys(raw []byte) error {
	var framesBuf [16]frame
	var keysBuf [64][]byte
	frames, keys := framesBuf[:0], keysBuf[:0] // keys: of every open object, outermost first
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		case '{':
			frames = append(frames, frame{object: true, wantKey: true, firstKey: len(keys)})
			i++
		case '[':
			frames = append(frames, frame{})
			i++
		case '}', ']':
			if len(frames) == 0 {
				return nil // not valid JSON: the decoder reports it
			}
			if top := frames[len(frames)-1]; top.object {
				keys = keys[:top.firstKey]
			}
			frames = frames[:len(frames)-1]
			valueDone(frames)
			i++
		case '"':
			end := endOfString(raw, i)
			if end < 0 {
				return nil
			}
			if n := len(frames); n > 0 && frames[n-1].object && frames[n-1].wantKey {
				var err error
				if keys, err = addKey(frames, keys, raw[i:end]); err != nil {
					return err
				}
			} else {
				valueDone(frames)
			}
			i = end
		default: // a number, true, false or null
			for i < len(raw) && !isDelimiter(raw[i]) {
				i++
			}
			valueDone(frames)
		}
	}
	return nil
}

// maxLinearKeys is how many keys an object compares one by one before it
// indexes them in a map.
const maxLinearKeys = 16

// frame is an open object or array.
type frame struct {
	object    bool
	wantKey   bool                // an object's next string is a key
	firstKey  int                 // an object's keys, from this index of the open objects' keys
	key       []byte              // an object's current key, unescaped
	index     int                 // an array's current element
	keyByName map[string]struct{} // an object's keys, once it has more than maxLinearKeys
}

// addKey records quoted, the key the top object of frames just named,
// among keys, the keys of the open objects, or refuses it if the object
// named it before.
func addKey(frames []frame, keys [][]byte, quoted []byte) ([][]byte, error) {
	key := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		var unescaped string
		if json.Unmarshal(quoted, &unescaped) != nil {
			return keys, nil // not valid JSON: the decoder reports it
		}
		key = []byte(unescaped)
	}
	top := &frames[len(frames)-1]
	if top.keyByName != nil {
		if _, dup := top.keyByName[string(key)]; dup {
			return keys, duplicate(frames, key)
		}
		top.keyByName[string(key)] = struct{}{}
	} else {
		earlier := keys[top.firstKey:]
		for _, k := range earlier {
			if bytes.Equal(k, key) {
				return keys, duplicate(frames, key)
			}
		}
		if len(earlier) < maxLinearKeys {
			keys = append(keys, key)
		} else { // from now on the object's keys are looked up in a map
			top.keyByName = make(map[string]struct{}, 2*maxLinearKeys)
			for _, k := range earlier {
				top.keyByName[string(k)] = struct{}{}
			}
			top.keyByName[string(key)] = struct{}{}
		}
	}
	top.key, top.wantKey = key, false
	return keys, nil
}

// valueDone moves the top of frames past the value just read.
func valueDone(frames []frame) {
	if len(frames) == 0 {
		return
	}
	if top := &frames[len(frames)-1]; top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

// duplicate is the error for key, named twice by the top object of frames.
func duplicate(frames []frame, key []byte) error {
	if len(frames) == 1 {
		return fmt.Errorf("duplicate key %q", key)
	}
	return fmt.Errorf("duplicate key %q in %s", key, path(frames[:len(frames)-1]))
}

// path names the value the innermost of frames is reading:
// "cells[1].capacities".
func path(frames []frame) string {
	var b strings.Builder
	for _, f := range frames {
		if !f.object {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(f.key)
	}
	return b.String()
}

// endOfString is the index just past the closing quote of the string
// opening at raw[start], or -1 if it does not close.
func endOfString(raw []byte, start int) int {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++ // the escaped byte; \uXXXX's digits need no care
		case '"':
			return i + 1
		}
	}
	return -1
}

// isDelimiter reports whether c ends a number or literal.
func isDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '}', ']', '{', '[', '"':
		return true
	}
	return false
}
