package cluster

import (
	"strconv"
	"testing"
)

// The metric label of every status is its decimal number, whether it is
// one of the constants or formatted.
func TestStatusLabelIsTheDecimalStatus(t *testing.T) {
	for status := 100; status < 600; status++ {
		if got, want := statusLabel(status), strconv.Itoa(status); got != want {
			t.Fatalf("statusLabel(%d) = %q, want %q", status, got, want)
		}
	}
}
