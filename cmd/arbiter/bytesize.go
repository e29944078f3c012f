package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// memoryUnits are GOMEMLIMIT's units, longest suffix first so that "B"
// does not match before "KiB".
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseBytes reads a size in GOMEMLIMIT's syntax: a whole number of bytes
// with an optional unit, B, KiB, MiB, GiB or TiB (4GiB). flag names the
// flag in the error.
func parseBytes(flag, s string) (int64, error) {
	digits, shift := s, uint(0)
	for _, u := range memoryUnits {
		if strings.HasSuffix(s, u.suffix) {
			digits, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || digits == "" || digits[0] == '+' {
		return 0, usageErrorf("%s %q: want a whole number of bytes with an optional unit, B, KiB, MiB, GiB or TiB (4GiB)", flag, s)
	}
	if n > math.MaxInt64>>shift {
		return 0, usageErrorf("%s %q is too large", flag, s)
	}
	return n << shift, nil
}

// formatBytes writes n in the largest unit that divides it (256MiB).
func formatBytes(n uint64) string {
	for _, u := range memoryUnits {
		if u.shift > 0 && n > 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return strconv.FormatUint(n, 10)
}

// byteSize is a flag of a size in bytes, written as parseBytes reads it.
type byteSize struct {
	name string
	v    *uint64
}

func (b byteSize) String() string {
	if b.v == nil {
		return "0"
	}
	return formatBytes(*b.v)
}

func (b byteSize) Set(s string) error {
	n, err := parseBytes("--"+b.name, s)
	if err != nil {
		return err
	}
	*b.v = uint64(n)
	return nil
}

func (b byteSize) Type() string { return "size" }
