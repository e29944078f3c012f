package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// vectors is testdata/jcs_vectors.json: the test vectors every client of
// the canonical form is checked against.
type vectors struct {
	Vectors []struct {
		Name      string `json:"name"`
		Input     string `json:"input"`
		Canonical string `json:"canonical"`
		SHA256    string `json:"sha256"`
		Error     bool   `json:"error"`
	} `json:"vectors"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/jcs_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Vectors) < 20 {
		t.Fatalf("only %d vectors", len(v.Vectors))
	}
	return v
}

func TestJCSVectors(t *testing.T) {
	for _, v := range loadVectors(t).Vectors {
		got, err := JCS([]byte(v.Input))
		if v.Error {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: JCS(%q) = %q, %v; want ErrInvalid", v.Name, v.Input, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: JCS(%q): %v", v.Name, v.Input, err)
			continue
		}
		if string(got) != v.Canonical {
			t.Errorf("%s: JCS(%q) = %q; want %q", v.Name, v.Input, got, v.Canonical)
		}
		sum := sha256.Sum256(got)
		if hex.EncodeToString(sum[:]) != v.SHA256 {
			t.Errorf("%s: sha256 %x; want %s", v.Name, sum, v.SHA256)
		}
		again, err := JCS(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("%s: JCS is not idempotent: %q, %v", v.Name, again, err)
		}
	}
}

// The two rules differ exactly where the issue found them to: JSON (the
// stored form, kept for replay) escapes U+2028 as Go does; JCS does not.
func TestJCSAndStoredFormDifferOnLineSeparator(t *testing.T) {
	in := []byte(`{"r":"a\u2028b"}`)
	stored, err := JSON(in)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := JCS(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(stored) != `{"r":"a\u2028b"}` {
		t.Errorf("stored form %q", stored)
	}
	if string(digest) != "{\"r\":\"a\u2028b\"}" {
		t.Errorf("JCS %q keeps an escape RFC 8785 does not", digest)
	}
}

func TestJCSBounds(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := JCS([]byte(deep)); !errors.Is(err, ErrInvalid) {
		t.Errorf("nesting of %d accepted: %v", MaxDepth+1, err)
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := JCS([]byte(ok)); err != nil {
		t.Errorf("nesting of %d refused: %v", MaxDepth, err)
	}
	for _, bad := range []string{"", "\xff", "[1,]", `{"a" 1}`} {
		if _, err := JCS([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("JCS(%q) accepted", bad)
		}
	}
}

func TestJCSValue(t *testing.T) {
	got, err := JCSValue(map[string]any{"z": "\u2029", "a": []int{3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":[3,1],\"z\":\"\u2029\"}"; string(got) != want {
		t.Errorf("got %q want %q", got, want)
	}
	if _, err := JCSValue(map[string]any{"f": 0.5}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a fraction in a digest input was accepted: %v", err)
	}
}

func FuzzJCS(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `"\u2028"`, `[9007199254740991]`, `{"\ue000":1,"\ud83d\ude00":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := JCS(raw)
		if err != nil {
			return
		}
		// A canonical form is accepted again and is its own canonical form,
		// and it means the same value as the stored form does.
		again, err := JCS(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("JCS(%q) = %q; again %q, %v", raw, c, again, err)
		}
		a, errA := JSON(raw)
		b, errB := JSON(c)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Fatalf("JCS changed the value of %q: %q vs %q (%v, %v)", raw, a, b, errA, errB)
		}
	})
}
