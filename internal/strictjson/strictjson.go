package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/internal/canon"
)

// Decode reads exactly one JSON value from raw into v. It refuses invalid
// UTF-8 and lone surrogate escapes (Go's decoder would quietly store U+FFFD
// in their place, something other than what was sent), an object that
// names a key twice (Go's decoder would keep the last one: two readers of
// the same body could disagree), object fields v does not declare, and
// anything after the value. Numbers decode into an interface as
// json.Number, keeping their literals.
//
// Its errors speak the API's terms: a value of the wrong type names the
// field by its JSON path and the JSON type it needs ("labels: want an
// array of strings, got a string"), never a Go type.
func Decode(raw []byte, v any) error {
	if !utf8.Valid(raw) {
		return errors.New("not valid UTF-8")
	}
	if err := canon.CheckEscapes(raw); err != nil {
		return err
	}
	// Invalid JSON, trailing data included, is left to the decoder: its
	// error says where, and the duplicate-key scanner may trust the grammar.
	if json.Valid(raw) {
		if err := checkDuplicateKeys(raw); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return describe(err, v)
	}
	if len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) != 0 {
		return errors.New("data after the value")
	}
	return nil
}

// DecodeFile is Decode of the file at path; errors name the file.
func DecodeFile(path string, v any) error {
	raw, err := readFile(path)
	if err != nil {
		return err
	}
	if err := Decode(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// MaxFileBytes bounds a configuration file read by DecodeFile.
const MaxFileBytes = 16 << 20

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	return raw, nil
}
