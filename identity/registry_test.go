package identity_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
)

// sum is an independent SHA-256 hex digest, to check the package's own.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func tok(t string) []string { return []string{sum([]byte(t))} }

// good is a valid principal with a bearer token digest.
func good(id string) identity.PrincipalConfig {
	return identity.PrincipalConfig{ID: id, Tenants: []string{"a"}, Roles: []string{identity.RoleMember}, TokenSHA256: tok("token-of-" + id)}
}

func TestRegistryHashesAreSHA256(t *testing.T) {
	for _, s := range []string{"", "a", "token with spaces", "ünïcødé-tøken", strings.Repeat("x", 10_000)} {
		if got, want := identity.HashToken(s), sum([]byte(s)); got != want {
			t.Errorf("HashToken(%q) = %s, want %s", s, got, want)
		}
		if got, want := identity.HashCert([]byte(s)), sum([]byte(s)); got != want {
			t.Errorf("HashCert(%q) = %s, want %s", s, got, want)
		}
	}
	// Lower-case hex, 64 digits: the form NewRegistry stores and compares.
	if h := identity.HashToken("x"); len(h) != 64 || strings.ToLower(h) != h {
		t.Errorf("HashToken gives %q, want 64 lower-case hex digits", h)
	}
}

// Every invalid registry is refused with an error naming the problem.
func TestRegistryValidation(t *testing.T) {
	shared := tok("shared-token")
	cases := []struct {
		name       string
		principals []identity.PrincipalConfig
		want       string // a fragment of the error
	}{
		{"duplicate id", []identity.PrincipalConfig{good("p"), func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = tok("other")
			return p
		}()}, "declared twice"},
		{"empty id", []identity.PrincipalConfig{good("")}, "principal id"},
		{"id with a control character", []identity.PrincipalConfig{good("p\n1")}, "principal id"},
		{"unknown role", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.Roles = []string{"superuser"}
			return p
		}()}, "unknown role"},
		{"role in the wrong case", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.Roles = []string{"Admin"}
			return p
		}()}, "unknown role"},
		{"no tenant", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.Tenants = nil
			return p
		}()}, "at least one tenant"},
		{"empty tenant", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.Tenants = []string{""}
			return p
		}()}, "tenant"},
		{"no role", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.Roles = []string{}
			return p
		}()}, "one role"},
		{"no credential", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = nil
			return p
		}()}, "no credential"},
		{"token digest not hex", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = []string{strings.Repeat("g", 64)}
			return p
		}()}, "64 hex digits"},
		{"token digest too short", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = []string{strings.Repeat("a", 62)}
			return p
		}()}, "64 hex digits"},
		{"token digest too long", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = []string{strings.Repeat("a", 66)}
			return p
		}()}, "64 hex digits"},
		{"odd-length digest", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.TokenSHA256 = []string{strings.Repeat("a", 63)}
			return p
		}()}, "64 hex digits"},
		{"cert digest not hex", []identity.PrincipalConfig{func() identity.PrincipalConfig {
			p := good("p")
			p.CertSHA256 = []string{"not-a-digest"}
			return p
		}()}, "cert_sha256"},
		{"token shared by two principals", []identity.PrincipalConfig{
			func() identity.PrincipalConfig { p := good("p"); p.TokenSHA256 = shared; return p }(),
			func() identity.PrincipalConfig { p := good("q"); p.TokenSHA256 = shared; return p }(),
		}, "share a credential"},
		{"token shared in another case", []identity.PrincipalConfig{
			func() identity.PrincipalConfig { p := good("p"); p.TokenSHA256 = shared; return p }(),
			func() identity.PrincipalConfig {
				p := good("q")
				p.TokenSHA256 = []string{strings.ToUpper(shared[0])}
				return p
			}(),
		}, "share a credential"},
		{"certificate shared by two principals", []identity.PrincipalConfig{
			func() identity.PrincipalConfig { p := good("p"); p.CertSHA256 = tok("cert"); return p }(),
			func() identity.PrincipalConfig { p := good("q"); p.CertSHA256 = tok("cert"); return p }(),
		}, "share a credential"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := identity.NewRegistry(tc.principals)
			if err == nil {
				t.Fatalf("NewRegistry accepted %s: %+v", tc.name, r)
			}
			if r != nil {
				t.Errorf("NewRegistry returned a registry with its error %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// A malformed digest is often a plaintext token pasted by mistake: the
// error must not repeat it.
func TestRegistryErrorsDoNotEchoCredentials(t *testing.T) {
	const secret = "plaintext-bearer-token-pasted-by-mistake"
	for _, field := range []string{"token_sha256", "cert_sha256"} {
		p := good("p")
		if field == "token_sha256" {
			p.TokenSHA256 = []string{secret}
		} else {
			p.CertSHA256 = []string{secret}
		}
		_, err := identity.NewRegistry([]identity.PrincipalConfig{p})
		if err == nil {
			t.Fatalf("%s holding a plaintext token was accepted", field)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error repeats the credential: %v", field, err)
		}
	}
}

func TestRegistryResolvesTokensAndCertificates(t *testing.T) {
	certDER := []byte("pretend DER of a client certificate")
	cfgs := []identity.PrincipalConfig{
		{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: tok("admin-token")},
		// Two tokens (rotation) and a certificate for one principal; the
		// digests are given in upper case, as some tools print them.
		{ID: "mem-a", Tenants: []string{"a", "a2"}, Roles: []string{identity.RoleMember, identity.RoleReader},
			TokenSHA256: []string{strings.ToUpper(sum([]byte("mem-a-old"))), sum([]byte("mem-a-new"))},
			CertSHA256:  []string{strings.ToUpper(sum(certDER))}},
		{ID: "cert-only", Tenants: []string{"b"}, Roles: []string{identity.RoleReader}, CertSHA256: tok("other-cert")},
	}
	r, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d, want 3", r.Len())
	}
	memA := identity.Principal{ID: "mem-a", Tenants: []string{"a", "a2"}, Roles: []string{identity.RoleMember, identity.RoleReader}}
	admin := identity.Principal{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	cases := []struct {
		name  string
		token string
		cert  []byte
		want  *identity.Principal
		cred  string // the Cred the answer carries: which credential it was
	}{
		{"admin token", "admin-token", nil, &admin, "token:" + sum([]byte("admin-token"))[:32]},
		{"old token", "mem-a-old", nil, &memA, "token:" + sum([]byte("mem-a-old"))[:32]},
		{"new token", "mem-a-new", nil, &memA, "token:" + sum([]byte("mem-a-new"))[:32]},
		{"unknown token", "mem-a-newer", nil, nil, ""},
		{"empty token", "", nil, nil, ""},
		{"token differing in case", "ADMIN-TOKEN", nil, nil, ""},
		{"the digest itself is not a token", sum([]byte("admin-token")), nil, nil, ""},
		{"certificate", "", certDER, &memA, "cert:" + sum(certDER)[:32]},
		{"unknown certificate", "", []byte("another DER"), nil, ""},
		{"a token's bytes as a certificate", "", []byte("admin-token"), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got identity.Principal
			var ok bool
			if tc.cert != nil {
				got, ok = r.ByCert(tc.cert)
			} else {
				got, ok = r.ByToken(tc.token)
			}
			switch {
			case tc.want == nil && ok:
				t.Fatalf("resolved to %+v, want nothing", got)
			case tc.want != nil && !ok:
				t.Fatalf("not resolved, want %+v", *tc.want)
			case tc.want != nil && got.Cred != tc.cred:
				t.Fatalf("resolved with Cred %q, want %q", got.Cred, tc.cred)
			}
			if tc.want != nil {
				got.Cred = ""
				if !reflect.DeepEqual(got, *tc.want) {
					t.Fatalf("resolved to %+v, want %+v", got, *tc.want)
				}
			}
		})
	}
	// A certificate-only principal has no token; its certificate digest is
	// not a token digest.
	if _, ok := r.ByToken("other-cert"); ok {
		t.Error("a certificate digest resolved as a token")
	}
	if p, ok := r.ByCert([]byte("other-cert")); !ok || p.ID != "cert-only" {
		t.Errorf("cert-only: %+v %v", p, ok)
	}
	// An empty registry is valid and resolves nothing.
	empty, err := identity.NewRegistry(nil)
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty registry: %v %v", empty, err)
	}
	if _, ok := empty.ByToken("admin-token"); ok {
		t.Error("empty registry resolved a token")
	}
}

// The registry is immutable: changing the configuration it was built from,
// or a principal it returned, changes nothing it resolves later.
func TestRegistryIsImmutable(t *testing.T) {
	cfg := identity.PrincipalConfig{ID: "p", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}, TokenSHA256: tok("p-token")}
	r, err := identity.NewRegistry([]identity.PrincipalConfig{cfg})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tenants[0], cfg.Roles[0] = "*", identity.RoleAdmin
	p, _ := r.ByToken("p-token")
	if p.InTenant("b") || p.HasRole(identity.RoleAdmin) {
		t.Fatalf("editing the config after NewRegistry changed the principal: %+v", p)
	}
	p.Tenants[0], p.Roles[0] = "*", identity.RoleAdmin
	again, _ := r.ByToken("p-token")
	if again.InTenant("b") || again.HasRole(identity.RoleAdmin) {
		t.Fatalf("editing a returned principal changed the registry: %+v", again)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "principals.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRegistryLoad(t *testing.T) {
	adminHash := sum([]byte("load-admin-token"))
	goodJSON := fmt.Sprintf(`[
  {"id": "admin", "tenants": ["*"], "roles": ["admin"], "token_sha256": [%q]},
  {"id": "reader", "tenants": ["a"], "roles": ["reader"], "cert_sha256": [%q]}
]`, adminHash, sum([]byte("reader-cert")))
	cases := []struct {
		name    string
		content string
		want    string // error fragment; "" for success
		anyErr  bool   // fails, with whatever message
	}{
		{"good file", goodJSON, "", false},
		{"good file with trailing whitespace", goodJSON + "\n\n  \t", "", false},
		{"unknown field", fmt.Sprintf(`[{"id": "admin", "tenants": ["*"], "roles": ["admin"], "token_sha256": [%q], "token": "oops"}]`, adminHash), "unknown field", false},
		{"misspelled field", fmt.Sprintf(`[{"id": "admin", "tenant": ["*"], "roles": ["admin"], "token_sha256": [%q]}]`, adminHash), "unknown field", false},
		{"trailing data", goodJSON + `[]`, "data after the value", false},
		{"trailing garbage", goodJSON + ` x`, "", true},
		{"bad JSON", `[{"id": "admin",`, "principals.json", false},
		{"not an array", `{"id": "admin"}`, "principals.json", false},
		{"empty file", ``, "principals.json", false},
		{"invalid principal", `[{"id": "p", "tenants": ["a"], "roles": ["owner"], "token_sha256": ["` + adminHash + `"]}]`, "unknown role", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := identity.Load(writeFile(t, tc.content))
			if tc.want == "" && !tc.anyErr {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if r.Len() != 2 {
					t.Errorf("Len = %d, want 2", r.Len())
				}
				if p, ok := r.ByToken("load-admin-token"); !ok || p.ID != "admin" || !p.HasRole(identity.RoleAdmin) || !p.InTenant("zzz") {
					t.Errorf("admin token: %+v %v", p, ok)
				}
				if p, ok := r.ByCert([]byte("reader-cert")); !ok || p.ID != "reader" || p.HasRole(identity.RoleMember) || p.InTenant("b") {
					t.Errorf("reader cert: %+v %v", p, ok)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load accepted %s: %+v", tc.name, r)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	if _, err := identity.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// collectStrings walks v (unexported fields included) and returns every
// string and byte slice it holds, map keys included.
func collectStrings(v reflect.Value, seen map[uintptr]bool, out *[]string) {
	switch v.Kind() {
	case reflect.String:
		*out = append(*out, v.String())
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		collectStrings(v.Elem(), seen, out)
	case reflect.Interface:
		if !v.IsNil() {
			collectStrings(v.Elem(), seen, out)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			collectStrings(v.Field(i), seen, out)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			*out = append(*out, string(v.Bytes()))
			return
		}
		for i := 0; i < v.Len(); i++ {
			collectStrings(v.Index(i), seen, out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			collectStrings(it.Key(), seen, out)
			collectStrings(it.Value(), seen, out)
		}
	}
}

// A registry keeps digests, never the tokens: no string or byte slice
// anywhere inside it, and none of its printed forms, holds a token.
func TestRegistryKeepsNoPlaintextToken(t *testing.T) {
	tokens := []string{"first-plaintext-token-1234", "second-plaintext-token-5678", "certificate-bytes-9012"}
	path := writeFile(t, fmt.Sprintf(`[
  {"id": "a", "tenants": ["a"], "roles": ["member"], "token_sha256": [%q, %q]},
  {"id": "b", "tenants": ["b"], "roles": ["reader"], "cert_sha256": [%q]}
]`, identity.HashToken(tokens[0]), identity.HashToken(tokens[1]), identity.HashCert([]byte(tokens[2]))))
	loaded, err := identity.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	built, err := identity.NewRegistry([]identity.PrincipalConfig{
		{ID: "a", Tenants: []string{"a"}, Roles: []string{"member"}, TokenSHA256: []string{identity.HashToken(tokens[0]), identity.HashToken(tokens[1])}},
		{ID: "b", Tenants: []string{"b"}, Roles: []string{"reader"}, CertSHA256: []string{identity.HashCert([]byte(tokens[2]))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*identity.Registry{"loaded": loaded, "built": built} {
		// Resolve every credential first, so that a cache filled on lookup
		// would be caught too.
		if _, ok := r.ByToken(tokens[0]); !ok {
			t.Fatalf("%s: token 0 not resolved", name)
		}
		if _, ok := r.ByToken(tokens[1]); !ok {
			t.Fatalf("%s: token 1 not resolved", name)
		}
		if _, ok := r.ByCert([]byte(tokens[2])); !ok {
			t.Fatalf("%s: certificate not resolved", name)
		}
		r.ByToken("a-wrong-guess-token-0000")
		var held []string
		collectStrings(reflect.ValueOf(r), map[uintptr]bool{}, &held)
		if !slices.Contains(held, identity.HashToken(tokens[0])) {
			t.Fatalf("%s: the walk found no token digest in %q; it does not see the registry's contents", name, held)
		}
		printed := []string{fmt.Sprintf("%v", r), fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r), fmt.Sprintf("%+v", *r)}
		for _, secret := range append(tokens, "a-wrong-guess-token-0000") {
			for _, s := range held {
				if strings.Contains(s, secret) {
					t.Errorf("%s: registry holds %q", name, s)
				}
			}
			for _, s := range printed {
				if strings.Contains(s, secret) {
					t.Errorf("%s: printed registry contains a token: %s", name, s)
				}
			}
		}
	}
}

// A credential's Cred matches the hash it came from, as a token or as a
// certificate, and nothing else: not the other kind's list, not a
// rotated-away token.
func TestCredIn(t *testing.T) {
	oldTok, newTok, cert := sum([]byte("old")), sum([]byte("new")), sum([]byte("der"))
	cases := []struct {
		name         string
		cred         string
		tokens, cert []string
		want         bool
	}{
		{"the token", identity.TokenCred(newTok), []string{newTok}, nil, true},
		{"one of several tokens", identity.TokenCred(oldTok), []string{newTok, oldTok}, nil, true},
		{"a token rotated away", identity.TokenCred(oldTok), []string{newTok}, []string{cert}, false},
		{"the certificate", identity.CertCred(cert), []string{newTok}, []string{cert}, true},
		{"a token's hash named as a certificate", identity.CertCred(newTok), []string{newTok}, nil, false},
		{"a certificate's hash named as a token", identity.TokenCred(cert), nil, []string{cert}, false},
		{"no credential named", "", []string{newTok}, []string{cert}, false},
		{"a kind that is neither", "key:" + newTok[:32], []string{newTok}, []string{newTok}, false},
		{"too few digits", "token:" + newTok[:31], []string{newTok}, nil, false},
		{"the whole hash", "token:" + newTok, []string{newTok}, nil, false},
		{"no credentials held", identity.TokenCred(newTok), nil, nil, false},
	}
	for _, tc := range cases {
		if got := identity.CredIn(tc.cred, tc.tokens, tc.cert); got != tc.want {
			t.Errorf("%s: CredIn(%q) = %v, want %v", tc.name, tc.cred, got, tc.want)
		}
	}
	if c := identity.TokenCred(newTok); len(c) != len("token:")+32 {
		t.Errorf("TokenCred = %q: want the kind and 32 hex digits", c)
	}
}

// ValidCred takes the names TokenCred and CertCred make, and nothing else.
func TestValidCred(t *testing.T) {
	h := sum([]byte("t"))
	for cred, want := range map[string]bool{
		identity.TokenCred(h): true, identity.CertCred(h): true,
		"": false, "token:": false, "token:" + h: false, "key:" + h[:32]: false,
		"token:" + strings.ToUpper(h[:32]): false, "token:" + h[:31] + "g": false, "token " + h[:32]: false,
	} {
		if got := identity.ValidCred(cred); got != want {
			t.Errorf("ValidCred(%q) = %v, want %v", cred, got, want)
		}
	}
}

// A registry names each credential's holder by the credential's name,
// and says whether it was made from the cluster's table.
func TestRegistryByCredAndTable(t *testing.T) {
	r, err := identity.NewRegistry([]identity.PrincipalConfig{
		{ID: "a", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}, TokenSHA256: tok("a1"), CertSHA256: tok("a-cert")},
		{ID: "b", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}, TokenSHA256: tok("b1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for cred, want := range map[string]string{
		identity.TokenCred(sum([]byte("a1"))):     "a",
		identity.CertCred(sum([]byte("a-cert"))):  "a",
		identity.TokenCred(sum([]byte("b1"))):     "b",
		identity.TokenCred(sum([]byte("a-cert"))): "",
		identity.TokenCred(sum([]byte("c1"))):     "",
	} {
		if id, ok := r.ByCred(cred); id != want || ok != (want != "") {
			t.Errorf("ByCred(%q) = %q %v, want %q", cred, id, ok, want)
		}
	}
	if p, ok := r.ByToken("a1"); !ok {
		t.Fatal("token a1 not resolved")
	} else if id, _ := r.ByCred(p.Cred); id != "a" {
		t.Errorf("the Cred ByToken gives names %q, want a", id)
	}
	if r.IsTable() || !r.AsTable().IsTable() || r.IsTable() {
		t.Error("AsTable marks a copy, and only the copy, as the table's")
	}
	if _, ok := r.AsTable().ByToken("b1"); !ok {
		t.Error("the table's copy resolves what the registry resolves")
	}
}
