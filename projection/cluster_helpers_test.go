package projection_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

// token is the bearer token of a test principal.
func token(id string) string { return "projection-test-token-" + id }

// registry authenticates the unit tests' principals by their tokens.
func registry(t testing.TB) *identity.Registry {
	t.Helper()
	var cfgs []identity.PrincipalConfig
	for _, p := range []identity.Principal{admin, agent, agent2, router, frontier, reader, stranger} {
		cfgs = append(cfgs, identity.PrincipalConfig{ID: p.ID, Tenants: p.Tenants, Roles: p.Roles, TokenSHA256: []string{identity.HashToken(token(p.ID))}})
	}
	reg, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// events records what each node's writer did, in order.
type events struct {
	mu  sync.Mutex
	per map[int][]projection.Event
}

func (e *events) of(i int) []projection.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]projection.Event(nil), e.per[i]...)
}

// pcluster is a 3-node cluster whose nodes write under roots[i] ("": no
// root), with authentication, recording every node's writer events.
type pcluster struct {
	*clustertest.Cluster
	t       *testing.T
	roots   []string
	dataDir []string
	ev      *events
}

func newPCluster(t *testing.T, roots []string, opts clustertest.Options) *pcluster {
	t.Helper()
	pc := &pcluster{t: t, roots: roots, dataDir: make([]string, len(roots)), ev: &events{per: map[int][]projection.Event{}}}
	opts.Nodes = len(roots)
	if opts.Principals == nil {
		opts.Principals = registry(t)
	}
	var mu sync.Mutex
	opts.Domains = func(i int) []domain.Domain {
		ds := builtin.With(builtin.Options{})
		for k, d := range ds {
			if d.Name == projection.Name {
				ds[k] = projection.Domain(projection.WithRuntimeRoot(roots[i]), projection.WithObserver(func(e projection.Event) {
					pc.ev.mu.Lock()
					pc.ev.per[i] = append(pc.ev.per[i], e)
					pc.ev.mu.Unlock()
				}))
			}
		}
		return ds
	}
	opts.Configure = func(i int, cfg *cluster.Config) {
		mu.Lock()
		pc.dataDir[i] = cfg.DataDir
		mu.Unlock()
	}
	pc.Cluster = clustertest.New(t, opts)
	return pc
}

// roots makes n runtime roots.
func roots(t *testing.T, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = t.TempDir()
	}
	return out
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    *errs.Error
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// call sends body as JSON (raw when it is []byte) to node i as who ("":
// no credential).
func (pc *pcluster) call(i int, who, method, path string, body any) reply {
	pc.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			pc.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, pc.URL(i)+path, rd)
	if err != nil {
		pc.t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+token(who))
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		pc.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, body: raw}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error *errs.Error `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error == nil {
			pc.t.Fatalf("%s %s: %d without an error body: %s", method, path, resp.StatusCode, raw)
		}
		r.err = e.Error
	}
	return r
}

// want checks an answer's status and error code ("" for success) and
// decodes a success into out.
func (r reply) want(t *testing.T, what string, status int, code errs.Code, out any) {
	t.Helper()
	if r.status != status || errs.CodeOf(r.err) != code {
		t.Fatalf("%s: %s, want %d %q", what, r, status, code)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s: %v in %s", what, err, r.body)
		}
	}
}

// digest is the leader's state without the FSM's bookkeeping.
func (pc *pcluster) digest() [32]byte {
	pc.t.Helper()
	return readStored(pc.t, pc.Node(pc.WaitLeader(10*time.Second)).FSM()).digest()
}

// unchanged requires that f changes no state on the leader (a refusal
// that reached the log moves only the index and the clock).
func (pc *pcluster) unchanged(what string, f func()) {
	pc.t.Helper()
	before := pc.digest()
	f()
	if pc.digest() != before {
		pc.t.Fatalf("%s changed the state", what)
	}
}

// file is node i's current.json of target id (nil: none).
func (pc *pcluster) file(i int, id string) []byte {
	pc.t.Helper()
	if pc.roots[i] == "" {
		return nil
	}
	path, err := projection.TargetPath(pc.roots[i], id)
	if err != nil {
		pc.t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return b
}

// waitFiles waits until every node with a root holds want for id.
func (pc *pcluster) waitFiles(id string, want []byte) {
	pc.t.Helper()
	ok := pc.Eventually(10*time.Second, func() bool {
		for i, r := range pc.roots {
			if r != "" && pc.Node(i) != nil && !bytes.Equal(pc.file(i, id), want) {
				return false
			}
		}
		return true
	})
	if !ok {
		for i := range pc.roots {
			pc.t.Logf("n%d: %s", i+1, pc.file(i, id))
		}
		pc.t.Fatalf("the nodes' current.json of %s never became %s", id, want)
	}
}

// setup configures lease_ttl_ms explicitly (there is no default) and
// registers a target of agent-7 with both channels.
func (pc *pcluster) setup(ttl int64, kind string) string {
	pc.t.Helper()
	pc.call(0, admin.ID, http.MethodPut, "/v1/projection/config", projection.ConfigRequest{LeaseTTLMs: ttl}).want(pc.t, "config", 200, "", nil)
	var res projection.TargetResult
	pc.call(1, agent.ID, http.MethodPost, "/v1/projection/targets", projection.TargetRequest{Attested: attested(kind), Channels: bothChannels}).want(pc.t, "target", 201, "", &res)
	return res.TargetID
}
