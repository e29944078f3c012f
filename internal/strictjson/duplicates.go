package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// checkDuplicateKeys refuses an object, at any depth, that names a key
// twice (after unescaping: "a" and "\u0061" are the same key). It walks
// the tokens with an explicit stack, so its memory and time are linear in
// the input, whatever the nesting; the path of the offending object is
// built only for the error. Malformed JSON is left to the decoder, whose
// error is the one reported.
func checkDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*frame
	// valueDone moves the top frame past the value just read.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.keys == nil {
			top.index++
		} else {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed: the decoder reports that
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.keys != nil && top.wantKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:len(stack)-1]
					valueDone()
					continue
				}
				key, _ := tok.(string)
				if top.keys[key] {
					if len(stack) == 1 {
						return fmt.Errorf("duplicate key %q", key)
					}
					return fmt.Errorf("duplicate key %q in %s", key, path(stack[:len(stack)-1]))
				}
				top.keys[key] = true
				top.key, top.wantKey = key, false
				continue
			}
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case '[':
			stack = append(stack, &frame{})
		case ']':
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// frame is an open object (keys set) or array.
type frame struct {
	keys    map[string]bool
	wantKey bool   // an object's next string token is a key
	key     string // the object's current key
	index   int    // an array's current element
}

// path names the value the innermost of frames is reading:
// "cells[1].capacities".
func path(frames []*frame) string {
	var b strings.Builder
	for _, f := range frames {
		if f.keys == nil {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}
