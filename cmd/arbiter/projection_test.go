package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// The projection commands against a one-node cluster: the config set and
// read, a target registered from typed flags (key digests computed from
// text), an envelope submitted, the lease acquired (held: exit 3 for a
// second writer), published and shown; a lease released; -o table flat;
// mistakes exit 2.
func TestProjectionCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}

	var cfg client.ProjectionConfig
	cliJSON(t, env, &cfg, "projection", "config")
	if cfg.Configured {
		t.Fatalf("projection config before a set: %+v", cfg)
	}
	cliJSON(t, env, &cfg, "projection", "config", "--lease-ttl", "30s")
	if cfg.LeaseTTLMs != 30_000 {
		t.Fatalf("projection config --lease-ttl 30s: %+v", cfg)
	}
	var target client.TargetResult
	cliJSON(t, env, &target, "projection", "target", "--capability", "hook-advisory", "--harness-type", "claude-code", "--projection-kind", "lane",
		"--instance-key-text", "instance", "--workspace-key-text", "workspace", "--channel", "computed-route.v1=router", "--agent-id", "agent-7")
	if !target.Created || !strings.HasPrefix(target.TargetID, "pt_") {
		t.Fatalf("projection target: %+v", target)
	}
	var view client.TargetView
	cliJSON(t, env, &view, "projection", "show", "--target", target.TargetID)
	if view.Attested.InstanceKeyDigest != sha256Digest([]byte("instance")) || len(view.Channels) != 1 {
		t.Fatalf("projection show: the digest is not the text's: %+v", view)
	}
	now := time.Now().UnixMilli() // the cluster runs on the wall clock
	envelope := fmt.Sprintf(`{"schema":"computed-route.v1","not_authority":true,"watermark":1,"expires_at_ms":%d,"provenance":{"run":"r1"},"citations":[],"body":{"next":"review"}}`, now+3_600_000)
	r := runCLI(t, env, envelope, "projection", "submit", "--target", target.TargetID, "--channel", "computed-route.v1", "--watermark", "1", "--envelope", "-")
	if r.status != 0 || !strings.Contains(r.stdout, `"accepted"`) {
		t.Fatalf("projection submit: %+v", r)
	}
	var lease client.ProjectionLease
	cliJSON(t, env, &lease, "projection", "acquire", "--target", target.TargetID, "--holder-text", "writer-1")
	if r := runCLI(t, env, "", "projection", "acquire", "--target", target.TargetID, "--holder-text", "writer-2"); r.status != exitNotTaken {
		t.Fatalf("a second writer while held: status %d, stderr %s", r.status, r.stderr)
	}
	fence := []string{"--target", target.TargetID, "--lease-token", lease.Token, "--epoch", fmt.Sprint(lease.FencingEpoch)}
	var pub client.PublishResult
	cliJSON(t, env, &pub, append([]string{"projection", "publish"}, fence...)...)
	if pub.PublicationSeq == 0 || pub.File != "none" {
		t.Fatalf("projection publish: %+v", pub)
	}
	out := cliJSON(t, env, nil, "projection", "show", "--target", target.TargetID, "--current")
	if !strings.Contains(out, `"publication_seq"`) || !strings.Contains(out, `"next": "review"`) {
		t.Fatalf("projection show --current:\n%s", out)
	}
	// Another epoch is a stale fence: exit 3.
	if r := runCLI(t, env, "", "projection", "release", "--target", target.TargetID, "--lease-token", lease.Token,
		"--epoch", fmt.Sprint(lease.FencingEpoch+1)); r.status != exitNotTaken {
		t.Fatalf("release at another epoch: status %d, stderr %s", r.status, r.stderr)
	}
	cliJSON(t, env, &lease, "projection", "acquire", "--target", target.TargetID, "--holder-text", "writer-2")
	var rel client.ProjectionReleaseResult
	cliJSON(t, env, &rel, "projection", "release", "--filename",
		fmt.Sprintf(`{"target_id":%q,"token":%q,"fencing_epoch":%d}`, target.TargetID, lease.Token, lease.FencingEpoch))
	if !rel.Released {
		t.Fatalf("projection release --json: %+v", rel)
	}
	for _, args := range [][]string{
		{"projection", "show", "--target", target.TargetID},
		{"projection", "show", "--target", target.TargetID, "--current"},
	} {
		r := runCLI(t, env, "", append(args, "-o", "table")...)
		if r.status != 0 || r.stdout == "" || strings.ContainsAny(r.stdout, "{}") {
			t.Errorf("arbiter %s -o table: status %d, JSON in a cell?\n%s", strings.Join(args, " "), r.status, r.stdout)
		}
	}

	for _, args := range [][]string{
		{"projection", "acquire", "--target", target.TargetID}, // no holder
		{"projection", "acquire", "--target", target.TargetID, "--holder", "sha256:00", "--holder-text", "x"},
		{"projection", "publish", "--target", target.TargetID, "--lease-token", "t", "--epoch", "x"},
		{"projection", "target", "--capability", "c", "--harness-type", "h", "--projection-kind", "k", "--instance-key", "d", "--workspace-key", "d", "--channel", "nobody"},
		{"projection", "config", "--lease-ttl", "30s", "--filename", `{"lease_ttl_ms":1}`},
		{"projection", "submit", "--target", target.TargetID, "--channel", "c", "--watermark", "1", "--envelope", "{"},
		{"projection", "show"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 1 || !strings.Contains(r.stderr, "--help'") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d, one line and see '... --help'", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
}

// A publication the answering node did not write its file for is no
// success: the answer is printed, and the command exits 1 (failed or
// pending); written, or no runtime root (none), exits 0.
func TestProjectionPublishNotWritten(t *testing.T) {
	for _, tc := range []struct {
		answer string
		status int
	}{
		{`{"target_id":"pt_x","publication_seq":9,"file":"written"}`, exitOK},
		{`{"target_id":"pt_x","publication_seq":9,"file":"none"}`, exitOK},
		{`{"target_id":"pt_x","publication_seq":9,"file":"failed","file_error":"no space left on device"}`, exitError},
		{`{"target_id":"pt_x","publication_seq":9,"file":"pending"}`, exitError},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, tc.answer)
		}))
		r := runCLI(t, map[string]string{"ARBITER_ADDR": srv.URL}, "", "projection", "publish", "--target", "pt_x", "--lease-token", "t", "--epoch", "8")
		srv.Close()
		if r.status != tc.status || !strings.Contains(r.stdout, `"publication_seq": 9`) || (tc.status != exitOK) != strings.Contains(r.stderr, "not written") {
			t.Errorf("publish answered %s: %+v", tc.answer, r)
		}
	}
}
