package authority_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

func TestParseConceptIDAccepts(t *testing.T) {
	for _, tc := range []struct {
		in     string
		ns     string
		number uint64
	}{
		{"RMDD-27", "RMDD", 27},
		{"GOC-19", "GOC", 19},
		{"A1-5", "A1", 5},
		{"Z-1", "Z", 1},
		{"A0Z9-10", "A0Z9", 10},
		{strings.Repeat("Q", authority.MaxNamespaceLen) + "-7", strings.Repeat("Q", authority.MaxNamespaceLen), 7},
		{"RMDD-999999999999999999", "RMDD", 999_999_999_999_999_999},
	} {
		t.Run(tc.in, func(t *testing.T) {
			id, err := authority.ParseConceptID(tc.in)
			if err != nil {
				t.Fatalf("ParseConceptID(%q): %v", tc.in, err)
			}
			if id.Namespace != tc.ns || id.Number != tc.number {
				t.Fatalf("ParseConceptID(%q) = %+v, want %s %d", tc.in, id, tc.ns, tc.number)
			}
			if id.String() != tc.in {
				t.Errorf("String() = %q, want the input %q back", id.String(), tc.in)
			}
			if id.NodeID() != "concept-reservation:"+tc.in {
				t.Errorf("NodeID() = %q", id.NodeID())
			}
		})
	}
}

func TestParseConceptIDRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"lower-case namespace", "rmdd-27"},
		{"mixed-case namespace", "Rmdd-27"},
		{"namespace starting with a digit", "1A-5"},
		{"leading zero", "RMDD-027"},
		{"zero", "RMDD-0"},
		{"zeros", "RMDD-00"},
		{"missing number", "RMDD-"},
		{"missing namespace", "-27"},
		{"missing hyphen", "RMDD27"},
		{"only a namespace", "RMDD"},
		{"two hyphens", "RMDD-2-7"},
		{"negative number", "RMDD--27"},
		{"plus sign", "RMDD-+27"},
		{"non-digit", "RMDD-2a"},
		{"hex", "RMDD-0x1b"},
		{"exponent", "RMDD-1e3"},
		{"underscore", "RM_DD-1"},
		{"space inside", "RMDD- 27"},
		{"leading space", " RMDD-27"},
		{"trailing newline", "RMDD-27\n"},
		{"NUL", "RMDD-27\x00"},
		{"namespace too long", strings.Repeat("A", authority.MaxNamespaceLen+1) + "-1"},
		{"number too long", "RMDD-1000000000000000000"},
		{"number far too long", "RMDD-" + strings.Repeat("9", 40)},
		{"unicode letter in namespace", "RMDDÉ-1"},
		{"fullwidth letters", "ＲＭＤＤ-1"},
		{"arabic-indic digit", "RMDD-٢"},
		{"fullwidth digit", "RMDD-２"},
		{"unicode hyphen", "RMDD‐27"},
		{"invalid UTF-8", "RMDD-2\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := authority.ParseConceptID(tc.in)
			if err == nil {
				t.Fatalf("ParseConceptID(%q) = %+v, want an error", tc.in, id)
			}
			wantCode(t, tc.in, err, errs.CodeInvalid)
		})
	}
}

// FuzzParseConceptID: whatever is accepted prints back as itself, so one
// concept has exactly one node identity.
func FuzzParseConceptID(f *testing.F) {
	for _, s := range []string{"RMDD-27", "A1-5", "RMDD-027", "rmdd-1", "X-", "-1", "Z-999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := authority.ParseConceptID(s)
		if err != nil {
			return
		}
		if id.String() != s || id.Number == 0 {
			t.Fatalf("ParseConceptID(%q) = %+v, which prints as %q", s, id, id.String())
		}
	})
}
