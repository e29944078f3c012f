package cluster_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
)

// A path that names a route answers another method with 405, the methods
// it takes in Allow, and the standard error body; a path that names no
// route is 404 whatever the method. Every served route is tried.
func TestHTTPWrongMethodIs405WithAllow(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)

	methods := map[string][]string{} // path -> methods served
	wildcard := regexp.MustCompile(`\{[a-z0-9_]+\}`)
	for _, r := range c.Node(0).Routes() {
		method, path, _ := strings.Cut(r.Pattern, " ")
		path = wildcard.ReplaceAllString(path, "x")
		methods[path] = append(methods[path], method)
	}
	if len(methods) < 20 {
		t.Fatalf("only %d paths served", len(methods))
	}
	for path, served := range methods {
		want := []string{}
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if slices.Contains(served, m) {
				want = append(want, m)
				if m == http.MethodGet {
					want = append(want, http.MethodHead)
				}
			}
		}
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if slices.Contains(served, m) {
				continue
			}
			r := apiDo(t, m, base+path, nil)
			r.wantError(t, m+" "+path, http.StatusMethodNotAllowed, errs.CodeMethodNotAllowed)
			if got := r.header.Get("Allow"); got != strings.Join(want, ", ") {
				t.Errorf("%s %s: Allow %q, want %q", m, path, got, strings.Join(want, ", "))
			}
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		r := apiDo(t, m, base+"/v1/nodes/nope", nil)
		r.wantError(t, m+" unknown path", http.StatusNotFound, errs.CodeNotFound)
		if a := r.header.Get("Allow"); a != "" {
			t.Errorf("%s unknown path: Allow %q", m, a)
		}
	}
}

// Wrong-typed values are refused in the API's terms: the field's JSON
// path and the JSON type it takes, never a Go type or struct name.
func TestHTTPTypeErrorsSpeakJSON(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)
	goNames := regexp.MustCompile(`Go |struct|\[\]string|uint64|CreateRequest|CASRequest|TimeFields|UpdateCellRequest|json:`)
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/nodes/create", `{"node_id":"x","labels":"a"}`, "labels: want an array of strings, got a string"},
		{"/v1/nodes/create", `{"node_id":"x","labels":[1]}`, "labels: want an array of strings, got a number inside it"},
		{"/v1/nodes/create", `{"node_id":"x","set_now":{"t":"soon"}}`, "set_now: want an object of integers, got a string inside it"},
		{"/v1/nodes/cas", `{"node_id":"x","updates":{"a":1},"due":"t"}`, "due: want an array of strings, got a string"},
		{"/v1/nodes/cas", `{"node_id":"x","updates":[]}`, "updates: want an object of JSON values, got an array"},
		{"/v1/capacity/cells", `{"schema_version":"1","tenant_ref":"t","cell":{"cell_id":"c","capacities":{"gpu":"x"}}}`, "cell.capacities: want an object of non-negative integers, got a string inside it"},
		{"/v1/capacity/cells", `{"schema_version":"1","tenant_ref":"t","cell":{"cell_id":"c","capacities":{"gpu":-1}}}`, "cell.capacities: want an object of non-negative integers, got the number -1 inside it"},
		{"/v1/nodes/create", `{"node_id":"x","node_id":"y"}`, `duplicate key "node_id"`},
	} {
		c.Unchanged(t, tc.body, func() {
			r := apiDo(t, http.MethodPost, base+tc.path, []byte(tc.body))
			r.wantError(t, tc.body, http.StatusUnprocessableEntity, errs.CodeInvalid)
			var e struct {
				Error errs.Error `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(e.Error.Message, tc.want) {
				t.Errorf("%s: message %q, want it to end %q", tc.body, e.Error.Message, tc.want)
			}
			if goNames.MatchString(e.Error.Message) {
				t.Errorf("%s: message names Go types: %q", tc.body, e.Error.Message)
			}
		})
	}
}

// Integers come back as integers, digit for digit: properties past 21
// digits (which the canonical form stores in exponent form) and past
// 2^53 (which a float64 would round).
func TestHTTPIntegersComeBackExact(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)
	body := `{"node_id":"big","properties":{"a":9007199254740993,"b":123456789012345678901234,"c":1e21,"d":-1.5e22,"e":{"f":[1e30]},"g":1.5e-7,"h":"1e+30"}}`
	for _, r := range []apiReply{
		apiDo(t, http.MethodPost, base+"/v1/nodes/create", []byte(body)),
		apiGet(t, base+"/v1/nodes/get?node_id=big"),
		apiDo(t, http.MethodPost, base+"/v1/nodes/cas", []byte(`{"node_id":"big","conditions":{"b":123456789012345678901234,"c":1000000000000000000000},"updates":{"i":1}}`)),
	} {
		for _, want := range []string{`"a":9007199254740993`, `"b":123456789012345678901234`, `"c":1000000000000000000000`,
			`"d":-15000000000000000000000`, `"f":[1000000000000000000000000000000]`, `"g":1.5e-7`, `"h":"1e+30"`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("answer %s lacks %s", r.body, want)
			}
		}
		if strings.Contains(string(r.body), `"swapped":false`) {
			t.Errorf("a condition written in full digits does not match its stored value: %s", r.body)
		}
	}
}

// A plain-HTTP client of a TLS node, an HTTPS client of a plain node and
// an HTTPS client that does not trust the node's CA each learn which
// mistake they made, not "internal".
func TestRemoteExplainsSchemeMismatch(t *testing.T) {
	tlsNodes := clustertest.New(t, clustertest.Options{Nodes: 1, TLS: true})
	plain := clustertest.New(t, clustertest.Options{Nodes: 1})
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tlsNodes.PeerCA.Pool, MinVersion: tls.VersionTLS12}}}
	for _, tc := range []struct {
		name   string
		remote *rawremote.Remote
		want   string
	}{
		{"http to a TLS node", rawremote.New("http://" + tlsNodes.Node(0).APIAddr()), "speaks HTTPS (TLS), not plain HTTP: use an https:// address"},
		{"https to a plain node", rawremote.New("https://" + plain.Node(0).APIAddr()).WithHTTPClient(trusting), "speaks plain HTTP, not HTTPS: use an http:// address"},
		{"https without the node's CA", rawremote.New("https://" + tlsNodes.Node(0).APIAddr()), "not signed by a CA this client trusts"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := tc.remote.Status(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || errs.CodeOf(err) != errs.CodeUnavailable || errs.IsOutcomeUnknown(err) {
			t.Errorf("%s: %v, want unavailable (certainly not applied) saying %q", tc.name, err, tc.want)
		}
		// The msgpack path says the same.
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, err = nodes.On(tc.remote).Get(ctx, "x", fsm.Stale)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (query): %v, want %q", tc.name, err, tc.want)
		}
	}
	// The right scheme works.
	if _, err := rawremote.New("https://" + tlsNodes.Node(0).APIAddr()).WithHTTPClient(trusting).Status(context.Background()); err != nil {
		t.Fatalf("https with the CA: %v", err)
	}
}
