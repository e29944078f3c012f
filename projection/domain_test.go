package projection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/projection"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// --projection-config holds lease_ttl_ms and nothing else; there is no
// default to fall back on.
func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	if req, err := projection.LoadConfigFile(writeFile(t, dir, "ok.json", `{"lease_ttl_ms": 5000}`)); err != nil || req.LeaseTTLMs != 5000 {
		t.Fatalf("LoadConfigFile = %+v, %v", req, err)
	}
	for name, body := range map[string]string{
		"empty.json":   `{}`,
		"zero.json":    `{"lease_ttl_ms": 0}`,
		"long.json":    `{"lease_ttl_ms": 3600001}`,
		"extra.json":   `{"lease_ttl_ms": 5000, "default_ttl_ms": 1}`,
		"string.json":  `{"lease_ttl_ms": "5s"}`,
		"not-json.txt": `lease_ttl_ms=5000`,
	} {
		if _, err := projection.LoadConfigFile(writeFile(t, dir, name, body)); err == nil {
			t.Errorf("LoadConfigFile(%s) accepted %s", name, body)
		}
	}
	if _, err := projection.LoadConfigFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
}

// The flags: a root that does not exist is an error at start (a typo must
// not become a node that silently writes nothing); so is a bad config
// file.
func TestFlagsAndLoad(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--projection-root", dir}, true},
		{[]string{"--projection-root", filepath.Join(dir, "missing")}, false},
		{[]string{"--projection-root", writeFile(t, dir, "a-file", "")}, false},
		{[]string{"--projection-config", writeFile(t, dir, "c.json", `{"lease_ttl_ms": 1000}`)}, true},
		{[]string{"--projection-config", writeFile(t, dir, "bad.json", `{}`)}, false},
	} {
		d := projection.Domain()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		d.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := d.Load(); (err == nil) != tc.ok {
			t.Errorf("Load after %v = %v, want ok %t", tc.args, err, tc.ok)
		}
	}
}

// A node proposes the lease_ttl_ms its config file (or WithLeaseTTL)
// names once a leader exists, and again when the file is reloaded.
func TestStartProposesConfiguration(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "projection.json", `{"lease_ttl_ms": 4321}`)
	var withFile domain.Domain
	c := clustertest.New(t, clustertest.Options{Domains: func(i int) []domain.Domain {
		ds := builtin.Domains()
		for k, d := range ds {
			if d.Name != projection.Name || i != 1 {
				continue
			}
			d = projection.Domain()
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			d.Flags(fs)
			if err := fs.Parse([]string{"--projection-config", file}); err != nil {
				t.Fatal(err)
			}
			if err := d.Load(); err != nil {
				t.Fatal(err)
			}
			ds[k], withFile = d, d
		}
		return ds
	}})
	ttl := func() int64 {
		n := c.Node(0)
		cfg, err := projection.NewService(n, n).Config(context.Background(), fsm.Linearizable)
		if err != nil {
			return -1
		}
		return cfg.LeaseTTLMs
	}
	if !c.Eventually(10*time.Second, func() bool { return ttl() == 4321 }) {
		t.Fatalf("lease_ttl_ms = %d, want the file's 4321", ttl())
	}
	writeFile(t, dir, "projection.json", `{"lease_ttl_ms": 1234}`)
	if err := withFile.Load(); err != nil {
		t.Fatal(err)
	}
	if !c.Eventually(10*time.Second, func() bool { return ttl() == 1234 }) {
		t.Fatalf("lease_ttl_ms = %d after a reload, want 1234", ttl())
	}
	// A reload that fails keeps what was proposed.
	writeFile(t, dir, "projection.json", `{}`)
	if err := withFile.Load(); err == nil {
		t.Fatal("a file without lease_ttl_ms reloaded")
	}
	time.Sleep(100 * time.Millisecond)
	if ttl() != 1234 {
		t.Fatalf("a failed reload changed lease_ttl_ms to %d", ttl())
	}
}

// failingPublish makes the first n publishes fail with an unknown
// outcome, after applying them when applied is set.
type failingPublish struct {
	fsm.Proposer
	n       int
	applied bool
}

func (f *failingPublish) Propose(ctx context.Context, cmd log.Command) (*fsm.Response, error) {
	if cmd.Type != projection.CmdPublish || f.n == 0 {
		return f.Proposer.Propose(ctx, cmd)
	}
	f.n--
	if f.applied {
		_, _ = f.Proposer.Propose(ctx, cmd)
	}
	return nil, errs.Unknown("leadership lost")
}

func TestHolder(t *testing.T) {
	e := newEnv(t)
	e.setTTL(10_000)
	id := e.target("holder")
	h := &projection.Holder{Service: e.s, TargetID: id, InstanceDigest: digest("h")}
	ctx := as(agent)
	res, err := h.Publish(ctx)
	if err != nil || res.PublicationSeq == 0 {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	// A publish whose outcome was unknown but applied: the retry answers
	// it (replayed).
	applied := &projection.Holder{Service: projection.NewService(&failingPublish{Proposer: e.l, n: 1, applied: true}, e.l), TargetID: id, InstanceDigest: digest("h")}
	res, err = applied.Publish(ctx)
	if err != nil || !res.Replayed {
		t.Fatalf("publish after an unknown outcome = %+v, %v; want the replayed publication", res, err)
	}
	// Publishes that never got through: the holder releases its lease, so
	// the target is free at once.
	lost := &projection.Holder{Service: projection.NewService(&failingPublish{Proposer: e.l, n: 2}, e.l), TargetID: id, InstanceDigest: digest("h")}
	if _, err := lost.Publish(ctx); !errs.IsOutcomeUnknown(err) {
		t.Fatalf("publish through a lost leader: %v", err)
	}
	if v := e.view(id); v.Lease.State != projection.LeaseReleased {
		t.Fatalf("after a failed publish the lease is %s, want released", v.Lease.State)
	}
	// A held target: conflict, with when to retry.
	held := e.acquire(id)
	_, err = h.Publish(ctx)
	if errs.CodeOf(err) != errs.CodeConflict || errs.From(err).Detail["retry_after_ms"] == nil {
		t.Fatalf("publish of a held target: %v", err)
	}
	_ = held
}

// fakeConn records what the CLI sends.
type fakeConn struct {
	fsm.Proposer
	fsm.Reader
	method, path string
	body         any
	answer       string // "": {"ok":true}
}

func (f *fakeConn) CallJSON(_ context.Context, method, path string, body, out any) error {
	f.method, f.path, f.body = method, path, body
	if p, ok := out.(*json.RawMessage); ok {
		*p = json.RawMessage(`{"ok":true}`)
		if f.answer != "" {
			*p = json.RawMessage(f.answer)
		}
	}
	return nil
}

// projection publish exits non-zero, after printing the answer, when the
// answering node did not write its file.
func TestCLIPublishWithoutTheFileFails(t *testing.T) {
	cli := projection.Domain().CLI
	for _, tc := range []struct {
		answer string
		fails  bool
	}{
		{answer: `{"target_id":"pt_x","publication_seq":9,"file":"written"}`},
		{answer: `{"target_id":"pt_x","publication_seq":9,"file":"none"}`},
		{answer: `{"target_id":"pt_x","publication_seq":9,"file":"failed","file_error":"no space left on device"}`, fails: true},
		{answer: `{"target_id":"pt_x","publication_seq":9,"file":"pending"}`, fails: true},
	} {
		conn := &fakeConn{answer: tc.answer}
		var out bytes.Buffer
		env := domain.CLIEnv{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard,
			Connect: func(*flag.FlagSet) func() (domain.Conn, error) {
				return func() (domain.Conn, error) { return conn, nil }
			}}
		err := cli.Run(env, []string{"publish", "--json", `{}`})
		if (err != nil) != tc.fails || !strings.Contains(out.String(), `"publication_seq": 9`) {
			t.Errorf("answer %s: %v, printed %s", tc.answer, err, out.String())
		}
		if tc.fails && (!errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "not written")) {
			t.Errorf("answer %s: error %v", tc.answer, err)
		}
	}
}

func TestCLI(t *testing.T) {
	cli := projection.Domain().CLI
	id, _ := projection.DeriveTargetID(agent.ID, attested("cli"))
	for _, tc := range []struct {
		args         []string
		stdin        string
		method, path string
		fails        bool
		body         any // the request built from flags, when not nil
	}{
		{args: []string{"config", "--lease-ttl", "30s"}, method: "PUT", path: "/v1/projection/config", body: projection.ConfigRequest{LeaseTTLMs: 30000}},
		{args: []string{"acquire", "--target", id, "--holder", "sha256:h"}, method: "POST", path: "/v1/projection/leases/acquire",
			body: projection.AcquireRequest{TargetID: id, HolderInstanceDigest: "sha256:h"}},
		{args: []string{"publish", "--target", id, "--lease-token", "tok", "--epoch", "7"}, method: "POST", path: "/v1/projection/publish",
			body: projection.FenceRequest{TargetID: id, Token: "tok", FencingEpoch: 7}},
		{args: []string{"release", "--target", id, "--lease-token", "tok", "--epoch", "7"}, method: "POST", path: "/v1/projection/leases/release",
			body: projection.FenceRequest{TargetID: id, Token: "tok", FencingEpoch: 7}},
		{args: []string{"publish", "--target", id, "--json", `{}`}, fails: true},
		{args: []string{"submit", "--target", id}, fails: true},
		{args: []string{"config", "--json", `{"lease_ttl_ms":30000}`}, method: "PUT", path: "/v1/projection/config"},
		{args: []string{"target"}, stdin: `{"attested":{}}`, method: "POST", path: "/v1/projection/targets"},
		{args: []string{"submit", "--json", `{}`}, method: "POST", path: "/v1/projection/channels/submit"},
		{args: []string{"acquire", "--json", `{}`}, method: "POST", path: "/v1/projection/leases/acquire"},
		{args: []string{"publish", "--json", `{}`}, method: "POST", path: "/v1/projection/publish"},
		{args: []string{"release", "--json", `{}`}, method: "POST", path: "/v1/projection/leases/release"},
		{args: []string{"show", "--target", id}, method: "GET", path: "/v1/projection/targets/" + id},
		{args: []string{"show", "--target", id, "--current"}, method: "GET", path: "/v1/projection/targets/" + id + "/current"},
		{args: []string{"show", "--target", "../etc"}, fails: true},
		{args: []string{"renew", "--json", `{}`}, fails: true},
		{args: []string{"publish", "--json", `{not json`}, fails: true},
		{args: nil, fails: true},
	} {
		conn := &fakeConn{}
		var out, errOut bytes.Buffer
		env := domain.CLIEnv{Stdin: strings.NewReader(tc.stdin), Stdout: &out, Stderr: &errOut,
			Connect: func(*flag.FlagSet) func() (domain.Conn, error) {
				return func() (domain.Conn, error) { return conn, nil }
			}}
		err := cli.Run(env, tc.args)
		if tc.fails {
			if err == nil || conn.path != "" {
				t.Errorf("%v: %v, sent %s %s", tc.args, err, conn.method, conn.path)
			}
			continue
		}
		if err != nil || conn.method != tc.method || conn.path != tc.path || !strings.Contains(out.String(), `"ok": true`) {
			t.Errorf("%v: %v, sent %s %s, printed %s", tc.args, err, conn.method, conn.path, out.String())
		}
		if tc.body != nil && !reflect.DeepEqual(conn.body, tc.body) {
			t.Errorf("%v: sent %#v, want %#v", tc.args, conn.body, tc.body)
		}
	}
}
