package projection_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
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
