package cluster

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// The credentials a follower sends beside a batch come back in order,
// "" for a command without one; a batch that names none sends no header.
func TestCredentialsHeaderRoundTrip(t *testing.T) {
	a, b := identity.TokenCred(identity.HashToken("a")), identity.CertCred(identity.HashCert([]byte("der")))
	for _, creds := range [][]string{{a}, {"", a}, {a, "", b, ""}, {b, b}} {
		h := credentialsHeaderOf(creds)
		if h == nil {
			t.Fatalf("%q: no header", creds)
		}
		got, err := credentialsFrom(h, len(creds))
		if err != nil || !slices.Equal(got, creds) {
			t.Fatalf("%q: read back %q, %v", creds, got, err)
		}
	}
	if h := credentialsHeaderOf([]string{"", ""}); h != nil {
		t.Fatalf("a batch without credentials sent %v", h)
	}
	if got, err := credentialsFrom(http.Header{}, 3); got != nil || err != nil {
		t.Fatalf("no header: %q, %v; want nothing", got, err)
	}
}

// A header that does not name one well-formed credential (or "-") per
// command is a peer's bug: invalid, never a guess.
func TestCredentialsHeaderRefusesWhatItDoesNotName(t *testing.T) {
	a := identity.TokenCred(identity.HashToken("a"))
	for _, tc := range []struct {
		value string
		n     int
	}{
		{a, 2},
		{a + "," + a, 1},
		{"-,-,", 3},
		{"token:" + identity.HashToken("a"), 1}, // the whole hash, not its name
		{"password:0123456789abcdef0123456789abcdef", 1},
		{"token:0123456789ABCDEF0123456789ABCDEF", 1},
		{a + " ", 1},
	} {
		_, err := credentialsFrom(http.Header{credentialsHeader: {tc.value}}, tc.n)
		if !errors.Is(err, errs.Invalid) {
			t.Errorf("%q for %d commands: %v, want invalid", tc.value, tc.n, err)
		}
	}
}

// Whatever credentialsFrom takes, it takes again once written back: the
// leader reads what the follower meant, never something near it.
func FuzzCredentialsHeader(f *testing.F) {
	f.Add(identity.TokenCred(identity.HashToken("a"))+",-", 2)
	f.Add("-", 1)
	f.Add(",,", 3)
	f.Fuzz(func(t *testing.T, value string, n int) {
		if n < 1 || n > maxForwardBatch {
			return
		}
		got, err := credentialsFrom(http.Header{credentialsHeader: {value}}, n)
		if err != nil || got == nil {
			return
		}
		again, err := credentialsFrom(credentialsHeaderOf(got), n)
		if credentialsHeaderOf(got) == nil {
			again, err = make([]string, n), nil
		}
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q read as %q, written back and read as %q (%v)", value, got, again, err)
		}
	})
}
