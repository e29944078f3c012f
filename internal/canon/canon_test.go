package canon

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	cases := map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "1": "1", "1.0": "1", "10e-1": "1",
		"0.50": "0.5", "-12.340": "-12.34", "1e3": "1000", "1E+3": "1000",
		"123456789012345678901": "123456789012345678901",
		"1e21":                  "1e+21", "1e30": "1e+30", "0.000001": "0.000001",
		"0.0000001": "1e-7", "1.5e-7": "1.5e-7", "25e-1": "2.5",
		"9007199254740993": "9007199254740993",
	}
	for in, want := range cases {
		got, err := Number(in)
		if err != nil || got != want {
			t.Errorf("Number(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "01", "1.", ".5", "1e", "1e+", "--1", "1x", "1e99999", strings.Repeat("1", 200), strings.Repeat("7", 123)} {
		if _, err := Number(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Number(%q) accepted", bad)
		}
	}
}

func TestJSON(t *testing.T) {
	got, err := JSON([]byte(` {"b": [1.0, true, null], "a": "x<y", "c": {"z":1,"y":2}} `))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x<y","b":[1,true,null],"c":{"y":2,"z":1}}`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
	if !IsCanonical(got) {
		t.Fatal("canonical output is not canonical")
	}
	for _, bad := range []string{`{"a":1} x`, "\xff", `{`, strings.Repeat("[", 40) + strings.Repeat("]", 40)} {
		if _, err := JSON([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("JSON(%q) accepted", bad)
		}
	}
}

func TestValueKeepsPrecision(t *testing.T) {
	got, err := Value(map[string]any{"n": json.Number("123456789012345678901"), "r": json.RawMessage(`2.50`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":123456789012345678901,"r":2.5}`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x"]}`, `-0.0e-0`, `"\u0000"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := JSON(b)
		if err != nil {
			return
		}
		again, err := JSON(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", b, c, again, err)
		}
	})
}

func TestCheckEscapes(t *testing.T) {
	for _, ok := range []string{`"plain"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\\ud800"`, `{"a":"\"\ud83d\ude00"}`, `"\ufffd"`} {
		if err := CheckEscapes([]byte(ok)); err != nil {
			t.Errorf("CheckEscapes(%s) = %v", ok, err)
		}
	}
	for _, bad := range []string{`"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, `"x\ud83d"`} {
		if err := CheckEscapes([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckEscapes(%s) accepted", bad)
		}
	}
	if _, err := JSON([]byte(`"\ud800"`)); !errors.Is(err, ErrInvalid) {
		t.Error("JSON accepted a lone surrogate")
	}
}

// The fast path of IsCanonical must agree with the full check.
func TestIsCanonicalFastPathAgrees(t *testing.T) {
	for _, v := range []string{`null`, `true`, `false`, `"abc"`, `"a b~"`, `""`, `"a\"b"`, `"\u0001"`, "\"\u2028\"", `"é"`,
		`0`, `-0`, `00`, `01`, `1`, `-1`, `123456789012345678`, `1234567890123456789`, `100`, `1.0`, `1e3`, `-`, `"unterminated`, ``, `[1]`, `{"a":1}`} {
		c, err := JSON([]byte(v))
		full := err == nil && string(c) == v
		if got := IsCanonical([]byte(v)); got != full {
			t.Errorf("IsCanonical(%s) = %v, full check says %v", v, got, full)
		}
	}
}

func TestQuotedLen(t *testing.T) {
	for _, s := range []string{"", "abc", "a<b>&c", "quote\"", "back\\slash", "tab\t", "é", "\u2028"} {
		c, err := Value(s)
		if err != nil || QuotedLen(s) != len(c) {
			t.Errorf("QuotedLen(%q) = %d, canonical %q is %d (%v)", s, QuotedLen(s), c, len(c), err)
		}
	}
}

// The scalar fast paths of Value agree with the JSON round trip.
func TestValueFastPathsAgree(t *testing.T) {
	for _, v := range []any{nil, true, false, "", "a<b>", "quote\"", "\u2028x", "é", 0, -7, int64(1) << 62, uint64(1) << 63, json.Number("1.50"), json.Number("-0")} {
		fast, err := Value(v)
		raw, _ := json.Marshal(v)
		slow, err2 := JSON(raw)
		if err != nil || err2 != nil || string(fast) != string(slow) {
			t.Errorf("Value(%#v) = %s (%v), round trip %s (%v)", v, fast, err, slow, err2)
		}
	}
}

func TestPlainIntegers(t *testing.T) {
	big := "1" + strings.Repeat("0", 126) // 127 digits: fits MaxNumberChars with a sign
	for _, tc := range []struct{ in, want string }{
		{`1e+21`, `1000000000000000000000`},
		{`-1.5e+22`, `-15000000000000000000000`},
		{`{"a":[1.23456789012345678901234e+23,"1e+30",{"b\"1e+22":1e+22}],"c":1.5e+0}`,
			`{"a":[123456789012345678901234,"1e+30",{"b\"1e+22":10000000000000000000000}],"c":1.5e+0}`},
		{`1.5e+1`, `15`},
		{`1.25e+1`, `1.25e+1`}, // not an integer: unchanged
		{`1e-7`, `1e-7`},
		{`1e+126`, big},
		{`1e+127`, `1e+127`}, // would exceed MaxNumberChars with a sign
		{`12345678901234567890`, `12345678901234567890`},
		{`"x\\"`, `"x\\"`},
	} {
		if got := string(PlainIntegers([]byte(tc.in))); got != tc.want {
			t.Errorf("PlainIntegers(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// What PlainIntegers writes canonicalizes back to the same value.
	for _, lit := range []string{"1e+21", "-9.99e+40", "1e+126"} {
		c1, err1 := Number(lit)
		c2, err2 := Number(string(PlainIntegers([]byte(lit))))
		if err1 != nil || err2 != nil || c1 != c2 {
			t.Errorf("%s: %s %v / %s %v", lit, c1, err1, c2, err2)
		}
	}
}
