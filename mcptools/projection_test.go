package mcptools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const channel = "computed-route.v1"

// target registers a target of agent-a's (agent and producer of its one
// channel), as the writer processes of one agent share it.
func target(t *testing.T) string {
	t.Helper()
	attested := client.Attested{SchemaVersion: "1", Capability: "hook-advisory", HarnessType: "claude-code",
		InstanceKeyDigest: digest("instance"), WorkspaceKeyDigest: digest("workspace"), ProjectionKind: unique(t)}
	reg, err := newClient(t, "agent-a").Projection().RegisterTarget(ctxOf(t), client.TargetRequest{Attested: attested,
		Channels: []client.ChannelBinding{{Channel: channel, Producer: "agent-a"}}})
	must(t, err)
	return reg.TargetID
}

// envelope is a computed-route envelope at watermark w, saying who made it.
func envelope(w uint64, who string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"schema":%q,"not_authority":true,"watermark":%d,"expires_at_ms":%d,"provenance":{"writer":%q},"citations":["c"],"body":{"route":%q}}`,
		channel, w, time.Now().Add(time.Hour).UnixMilli(), who, who))
}

// publication is what current.json says of who wrote it.
type publication struct {
	TargetID       string `json:"target_id"`
	PublicationSeq uint64 `json:"publication_seq"`
	FencingEpoch   uint64 `json:"fencing_epoch"`
	Channels       []struct {
		Envelope json.RawMessage `json:"envelope"`
	} `json:"channels"`
}

// currentOnEveryNode waits (following the files, at most 15 s) until
// every node's current.json of target holds publication seq, and
// returns them.
func currentOnEveryNode(t *testing.T, targetID string, seq uint64) []publication {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var out []publication
		for _, root := range roots {
			raw, err := os.ReadFile(filepath.Join(root, "hook-projections", targetID, "current.json"))
			var p publication
			if err == nil && json.Unmarshal(raw, &p) == nil && p.PublicationSeq == seq {
				out = append(out, p)
			}
		}
		if len(out) == len(roots) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("current.json of %s holds publication %d on %d of %d nodes", targetID, seq, len(out), len(roots))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// acquireWhenFree acquires target's lease through s, waiting out a
// holder's lease by the retry_after_ms the refusals advise (bounded).
func acquireWhenFree(t *testing.T, s *mcp.ClientSession, targetID, holder string) result {
	t.Helper()
	for range 50 {
		r := call(t, s, "projection_acquire", map[string]any{"target_id": targetID, "holder_instance_digest": holder})
		if !r.IsError {
			return r
		}
		retry, _ := r.get("error", "detail", "retry_after_ms").(float64)
		if r.code() != "conflict" || retry <= 0 {
			t.Fatalf("acquire: %s", r.Raw)
		}
		time.Sleep(time.Duration(retry) * time.Millisecond)
	}
	t.Fatal("the lease never became free")
	return result{}
}

// Two MCP processes of one agent race a target. The first holds the
// lease; the second is refused (conflict, retry_after_ms) until the
// lease expires and then takes over; both publish at once, and only the
// fence holder's publication reaches current.json, on every node: the
// stale holder's publish is stale_fence and writes nothing.
func TestProjectionRaceStaleHolderWritesNothing(t *testing.T) {
	targetID := target(t)
	one, two := agent(t, "agent-a"), agent(t, "agent-a")
	first := call(t, one, "projection_acquire", map[string]any{"target_id": targetID, "holder_instance_digest": digest("one")}).ok(t)
	held := call(t, two, "projection_acquire", map[string]any{"target_id": targetID, "holder_instance_digest": digest("two")})
	if !held.IsError || held.code() != "conflict" || held.get("error", "detail", "retry_after_ms") == nil {
		t.Fatalf("a second acquire while held: %s", held.Raw)
	}
	second := acquireWhenFree(t, two, targetID, digest("two"))
	if second.get("fencing_epoch").(float64) <= first.get("fencing_epoch").(float64) {
		t.Fatalf("takeover epoch %v after %v", second.get("fencing_epoch"), first.get("fencing_epoch"))
	}
	call(t, two, "projection_submit", map[string]any{"target_id": targetID, "channel": channel,
		"source_watermark": 1, "envelope": envelope(1, "two")}).ok(t)

	fence := func(r result) map[string]any {
		return map[string]any{"target_id": targetID, "token": r.get("token"), "fencing_epoch": r.get("fencing_epoch")}
	}
	var stale, fresh result
	var wg sync.WaitGroup
	wg.Go(func() { stale = call(t, one, "projection_publish", fence(first)) })
	wg.Go(func() { fresh = call(t, two, "projection_publish", fence(second)) })
	wg.Wait()
	if !stale.IsError || stale.code() != "stale_fence" || stale.Meta["http_status"] != float64(409) {
		t.Fatalf("the stale holder's publish: %s", stale.Raw)
	}
	fresh.ok(t)
	if fresh.get("fencing_epoch") != second.get("fencing_epoch") || fresh.get("file") != "written" {
		t.Fatalf("the holder's publish: %s", fresh.Raw)
	}
	seq := uint64(fresh.get("publication_seq").(float64))
	for _, p := range currentOnEveryNode(t, targetID, seq) {
		if p.TargetID != targetID || float64(p.FencingEpoch) != second.get("fencing_epoch") ||
			len(p.Channels) != 1 || !bytes.Contains(p.Channels[0].Envelope, []byte(`"writer":"two"`)) {
			t.Fatalf("current.json: %+v", p)
		}
	}
	view := call(t, one, "projection_target", map[string]any{"target_id": targetID}).ok(t)
	if view.get("last_publication", "publication_seq") != fresh.get("publication_seq") || view.get("lease", "holder_instance_digest") != digest("two") {
		t.Fatalf("target: %s", view.Raw)
	}
	// The stale holder can release nothing either.
	if rel := call(t, one, "projection_release", fence(first)); !rel.IsError && rel.get("released") != false {
		t.Fatalf("the stale holder released: %s", rel.Raw)
	}
}

// Two MCP processes call publish_projection on one target at once, each
// with its own envelope. Every success is a publication; every failure a
// refusal the API gives (conflict while the other holds the lease,
// stale_watermark when the other's envelope is newer), and current.json
// holds the last publication, the one its publisher's fence allowed.
// Neither leaves the lease held: a third acquire succeeds at once.
func TestPublishProjectionRace(t *testing.T) {
	targetID := target(t)
	sessions := [2]*mcp.ClientSession{agent(t, "agent-a"), agent(t, "agent-a")}
	results := make([]result, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			<-start
			results[i] = call(t, s, "publish_projection", map[string]any{"target_id": targetID,
				"holder_instance_digest": digest(fmt.Sprint("writer-", i)),
				"channels":               []map[string]any{{"channel": channel, "source_watermark": 10 + i, "envelope": envelope(uint64(10+i), fmt.Sprint("writer-", i))}}})
		})
	}
	close(start)
	wg.Wait()
	var last result
	for i, r := range results {
		switch {
		case !r.IsError:
			if r.get("file") != "written" || r.get("publication_seq") == nil {
				t.Fatalf("writer %d: %s", i, r.Raw)
			}
			if last.Body == nil || r.get("publication_seq").(float64) > last.get("publication_seq").(float64) {
				last = r
			}
		case r.code() == "conflict" && r.get("error", "detail", "retry_after_ms") != nil:
		case r.code() == "stale_watermark":
		default:
			t.Fatalf("writer %d: %s", i, r.Raw)
		}
	}
	if last.Body == nil {
		t.Fatalf("no writer published: %s / %s", results[0].Raw, results[1].Raw)
	}
	seq := uint64(last.get("publication_seq").(float64))
	for _, p := range currentOnEveryNode(t, targetID, seq) {
		if float64(p.FencingEpoch) != last.get("fencing_epoch") {
			t.Fatalf("current.json epoch %d, want the publisher's %v", p.FencingEpoch, last.get("fencing_epoch"))
		}
	}
	third := agent(t, "agent-a")
	free := call(t, third, "projection_acquire", map[string]any{"target_id": targetID, "holder_instance_digest": digest("third")})
	if free.IsError {
		t.Fatalf("publish_projection left the lease held: %s", free.Raw)
	}
	call(t, third, "projection_release", map[string]any{"target_id": targetID, "token": free.get("token"), "fencing_epoch": free.get("fencing_epoch")}).ok(t)
}
