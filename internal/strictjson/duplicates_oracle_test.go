package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// checkDuplicateKeysByTokens is the duplicate-key check as it was before
// duplicates.go's byte scanner: a walk of encoding/json's tokens, simple
// enough to trust and about 30 allocations a request body. It stays as the
// oracle the scanner is fuzzed against (FuzzDuplicateKeysAgree).
func checkDuplicateKeysByTokens(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*tokenFrame
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
					return fmt.Errorf("duplicate key %q in %s", key, tokenPath(stack[:len(stack)-1]))
				}
				top.keys[key] = true
				top.key, top.wantKey = key, false
				continue
			}
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			stack = append(stack, &tokenFrame{keys: map[string]bool{}, wantKey: true})
		case '[':
			stack = append(stack, &tokenFrame{})
		case ']':
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// tokenFrame is an open object (keys set) or array.
type tokenFrame struct {
	keys    map[string]bool
	wantKey bool   // an object's next string token is a key
	key     string // the object's current key
	index   int    // an array's current element
}

// tokenPath names the value the innermost of frames is reading:
// "cells[1].capacities".
func tokenPath(frames []*tokenFrame) string {
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
