package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	arblog "github.com/arbiterhq/arbiter/log"
)

// hardBuf is a log sink shared by several nodes.
type hardBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (h *hardBuf) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.Write(p)
}

func (h *hardBuf) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.String()
}

// hardNode is a one-node cluster with authentication and the given
// settings.
func hardNode(t *testing.T, configure func(cfg *cluster.Config)) *clustertest.Cluster {
	t.Helper()
	return isoCluster(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) { configure(cfg) }})
}

// hardRaw sends raw bytes on a new connection and returns it.
func hardRaw(t *testing.T, addr string, raw []byte) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if len(raw) > 0 {
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write(raw); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	return conn
}

// hardClosed waits up to limit for the server to close conn (reading and
// discarding whatever it sends) and returns how long that took, or fails.
func hardClosed(t *testing.T, conn net.Conn, limit time.Duration) (time.Duration, []byte) {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v (read %q)", limit, got)
	}
	return time.Since(start), got
}

// A client that sends its headers slower than ReadHeaderTimeout is cut
// off, and a normal client is served meanwhile.
func TestHardeningSlowHeadersAreCutOff(t *testing.T) {
	c := hardNode(t, func(cfg *cluster.Config) { cfg.ReadHeaderTimeout = 300 * time.Millisecond })
	addr := c.Node(0).APIAddr()
	conn := hardRaw(t, addr, []byte("GET /v1/cluster/status HTTP/1.1\r\nHost: arbiter\r\nX-Slow: "))
	start := time.Now()

	closed := make(chan time.Duration, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, conn)
		closed <- time.Since(start)
	}()
	// Drip a header byte every 100 ms for up to 5 s; meanwhile a normal
	// client is served.
	var cutAfter time.Duration
	served := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
drip:
	for time.Since(start) < 5*time.Second {
		select {
		case d := <-closed:
			cutAfter = d
			break drip
		case <-tick.C:
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = conn.Write([]byte("x"))
			if served < 3 {
				t0 := time.Now()
				r := isoDo(t, isoClient, http.MethodGet, c.URL(0)+"/healthz", "", nil)
				if r.status != 200 || time.Since(t0) > 2*time.Second {
					t.Errorf("a normal client during the drip: %s after %v", r, time.Since(t0))
				}
				served++
			}
		}
	}
	if cutAfter == 0 {
		t.Fatalf("the slow client was not cut off within %v", time.Since(start))
	}
	if cutAfter < 250*time.Millisecond || cutAfter > 3*time.Second {
		t.Errorf("the slow client was cut off after %v, want about the 300ms ReadHeaderTimeout", cutAfter)
	}
	if served == 0 {
		t.Error("no normal request was made during the drip")
	}
}

// Headers beyond 64 KiB get 431; bodies beyond their limit get 413 and
// change nothing; a body at the limit is read.
func TestHardeningHeaderAndBodyLimits(t *testing.T) {
	c := hardNode(t, func(cfg *cluster.Config) {})
	addr := c.Node(0).APIAddr()
	header := func(path string, size int) int {
		t.Helper()
		req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: arbiter\r\nAuthorization: Bearer %s\r\nX-Big: %s\r\nConnection: close\r\n\r\n",
			path, isoToken("mem-a"), strings.Repeat("h", size))
		conn := hardRaw(t, addr, []byte(req))
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("header of %d bytes: %v", size, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name   string
		path   string
		size   int
		status int
	}{
		{"public route, 60 KiB", "/healthz", 60 << 10, 200},
		{"public route, 80 KiB", "/healthz", 80 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"authenticated route, 60 KiB", "/v1/cluster/status", 60 << 10, 200},
		{"authenticated route, 80 KiB", "/v1/cluster/status", 80 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"authenticated route, 1 MiB", "/v1/cluster/status", 1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run("header "+tc.name, func(t *testing.T) {
			if got := header(tc.path, tc.size); got != tc.status {
				t.Errorf("status %d, want %d", got, tc.status)
			}
		})
	}

	// A reserve request padded with trailing spaces to a given size: were
	// the limit not applied, it would create its concept.
	padded := func(id string, size int) []byte {
		b := []byte(fmt.Sprintf(`{"concept_id":%q,"tenant_ref":"a","request_ref":"r-%s","purpose_digest":"p"}`, id, id))
		return append(b, bytes.Repeat([]byte(" "), size-len(b))...)
	}
	mem := isoToken("mem-a")
	post := func(path string, body []byte, ctype string) isoReply {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, c.URL(0)+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", "Bearer "+mem)
		resp, err := isoClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s of %d bytes: %v", path, len(body), err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return isoParse(t, resp, raw)
	}
	exists := func(id string) bool {
		return strings.HasPrefix(isoAdminGet(t, c, 0, "/v1/concepts/get?concept_id="+id+"&tenant_ref=a"), "200")
	}
	if r := post("/v1/concepts/reserve", padded("ISO-77", domain.MaxBodyBytes+1), "application/json"); r.status != http.StatusRequestEntityTooLarge || r.code != errs.CodeTooLarge {
		t.Errorf("JSON body of MaxBodyBytes+1: %s, want 413 too_large", r)
	}
	if r := post("/v1/concepts/reserve", padded("ISO-76", 8<<20), "application/json"); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("JSON body of 8 MiB: %s, want 413", r)
	}
	if exists("ISO-77") || exists("ISO-76") {
		t.Error("an oversize request created its concept")
	}
	if r := post("/v1/concepts/reserve", padded("ISO-78", domain.MaxBodyBytes), "application/json"); r.status != http.StatusCreated {
		t.Errorf("JSON body of exactly MaxBodyBytes: %s, want 201", r)
	}
	if !exists("ISO-78") {
		t.Error("the request at the limit did not create its concept")
	}
	// The msgpack command route has its own limit, a little over 2 MiB.
	if r := post("/v1/commands", bytes.Repeat([]byte{0xA1}, arblog.MaxCommandBytes+1), "application/msgpack"); r.status != http.StatusRequestEntityTooLarge || r.code != errs.CodeTooLarge {
		t.Errorf("command body of MaxCommandBytes+1: %s, want 413", r)
	}
	// Capacity routes share the JSON limit.
	big := append([]byte(`{"schema_version":"1","tenant_ref":"a","max_count":10}`), bytes.Repeat([]byte(" "), domain.MaxBodyBytes)...)
	if r := post("/v1/capacity/status", big, "application/json"); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("capacity body over the limit: %s, want 413", r)
	}
}

// MaxConcurrentRequests bounds the requests in flight: beyond it, 429 with
// Retry-After, and the slots come back when requests finish.
func TestHardeningConcurrencyLimit(t *testing.T) {
	c := hardNode(t, func(cfg *cluster.Config) { cfg.MaxConcurrentRequests = 2 })
	mem := isoToken("mem-a")
	// Two long polls of 2 s hold both slots. On a loaded machine a poll
	// may reach the node late or a change may end it early: the scenario
	// is tried again (at most 3 times) until a 429 is seen while both were
	// in flight.
	var (
		polls    []isoReply
		refused  isoReply
		start    time.Time
		inFlight bool
	)
	for attempt := 1; attempt <= 3; attempt++ {
		last := isoLastSeq(t, c)
		var wg sync.WaitGroup
		polls = make([]isoReply, 2)
		start = time.Now()
		for i := range polls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := isoTry(isoClient, http.MethodGet, c.URL(0)+fmt.Sprintf("/v1/changes?after=%d&wait_ms=2000", last), mem, nil)
				if err != nil {
					r.body = []byte(err.Error())
				}
				polls[i] = r
			}()
		}
		refused = isoReply{}
		for time.Since(start) < 1500*time.Millisecond {
			r := isoDo(t, isoClient, http.MethodGet, c.URL(0)+"/healthz", "", nil)
			if r.status == http.StatusTooManyRequests {
				refused = r
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		inFlight = time.Since(start) < 1900*time.Millisecond
		wg.Wait()
		if refused.status == http.StatusTooManyRequests && inFlight {
			break
		}
		t.Logf("attempt %d: no 429 while both long polls were in flight (429 seen: %v)", attempt, refused.status == http.StatusTooManyRequests)
	}
	if refused.status != http.StatusTooManyRequests {
		t.Fatalf("no 429 while two long polls held both slots")
	}
	if !inFlight {
		t.Fatalf("the 429 came too late to be sure both long polls were in flight")
	}
	if refused.code != errs.CodeBackpressure {
		t.Errorf("429 with code %q, want backpressure: %s", refused.code, refused.body)
	}
	if s, err := strconv.Atoi(refused.header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("429 with Retry-After %q", refused.header.Get("Retry-After"))
	}
	for i, p := range polls {
		if p.status != 200 {
			t.Errorf("long poll %d: %s", i, p)
		}
	}
	if took := time.Since(start); took < 1900*time.Millisecond {
		t.Errorf("the long polls returned after %v, before their 2s wait", took)
	}
	// The slots are free again, also for authenticated routes.
	for _, path := range []string{"/healthz", "/v1/cluster/status", "/v1/cluster/status"} {
		if r := isoDo(t, isoClient, http.MethodGet, c.URL(0)+path, mem, nil); r.status != 200 {
			t.Errorf("%s after the long polls: %s", path, r)
		}
	}
}

// The read, write and idle timeouts reach the server.
func TestHardeningTimeouts(t *testing.T) {
	c := hardNode(t, func(cfg *cluster.Config) {
		cfg.ReadTimeout = time.Second
		// Shorter than ReadTimeout: net/http cancels a request's context
		// when the read deadline passes during the handler, which ends a
		// long poll early; its answer must then still miss the write
		// deadline.
		cfg.WriteTimeout = 800 * time.Millisecond
		cfg.IdleTimeout = time.Second
	})
	addr := c.Node(0).APIAddr()
	mem := isoToken("mem-a")

	t.Run("a body sent too slowly", func(t *testing.T) {
		conn := hardRaw(t, addr, []byte(fmt.Sprintf("POST /v1/concepts/reserve HTTP/1.1\r\nHost: arbiter\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"concept_id\":", mem)))
		took, got := hardClosed(t, conn, 5*time.Second)
		if took > 3*time.Second {
			t.Errorf("the stalled body was given %v", took)
		}
		if bytes.HasPrefix(got, []byte("HTTP/1.1 2")) {
			t.Errorf("a truncated body was served: %q", got)
		}
	})
	t.Run("an idle connection", func(t *testing.T) {
		conn := hardRaw(t, addr, []byte("GET /healthz HTTP/1.1\r\nHost: arbiter\r\n\r\n"))
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first request: %v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		_, err = br.ReadByte()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("an idle keep-alive connection stayed open past the idle timeout")
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("an idle connection was closed after %v, want about 1s", took)
		}
	})
	t.Run("a long poll answers before the write timeout cuts it", func(t *testing.T) {
		// The server shortens a long poll to end before its write timeout,
		// so the empty page arrives instead of a connection cut mid-way.
		last := isoLastSeq(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(0)+fmt.Sprintf("/v1/changes?after=%d&wait_ms=2500", last), nil)
		req.Header.Set("Authorization", "Bearer "+mem)
		start := time.Now()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("long poll with a write timeout shorter than the wait: %v", err)
		}
		raw, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("long poll: %d %s %v", resp.StatusCode, raw, rerr)
		}
		if took := time.Since(start); took > 800*time.Millisecond {
			t.Errorf("the long poll answered after %v, past the 800ms write timeout", took)
		}
	})
}

// No bearer token, not the peer token, appears in the nodes' logs, in
// /metrics or in any answer, whatever the requests.
func TestHardeningNoSecretsInLogsMetricsOrErrors(t *testing.T) {
	logs := &hardBuf{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := isoCluster(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) { cfg.Logger = logger }})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	var answers []string
	record := func(r isoReply) isoReply {
		var h strings.Builder
		_ = r.header.Write(&h)
		answers = append(answers, h.String()+string(r.body))
		return r
	}
	do := func(i int, method, path, token string, body any) isoReply {
		t.Helper()
		return record(isoDo(t, isoClient, method, isoURL(c, i, path), token, body))
	}
	secrets := []string{c.PeerToken, isoUnknownToken}
	for _, p := range isoPrincipals {
		secrets = append(secrets, isoToken(p.id))
	}
	if c.PeerToken == "" {
		t.Fatal("the cluster has no peer token")
	}

	// Every principal, through a follower (forwarded with the peer token)
	// and the leader, on routes it may and may not use.
	for _, p := range isoPrincipals {
		tok := isoToken(p.id)
		for _, i := range []int{follower, leader} {
			do(i, http.MethodPost, "/v1/concepts/reserve", tok, authority.ReserveRequest{ConceptID: "ISO-" + strconv.Itoa(10+i), TenantRef: "a", RequestRef: "r-" + p.id, PurposeDigest: "p"})
			do(i, http.MethodGet, "/v1/concepts/list?tenant_ref=a", tok, nil)
			do(i, http.MethodGet, "/v1/concepts/get?concept_id=ISO-10&tenant_ref=b", tok, nil)
			do(i, http.MethodPost, "/v1/capacity/cells", tok, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "a",
				Cell: capacity.CellSpec{CellID: "cell-" + p.id, Capacities: map[string]uint64{"gpu": 1}}})
			do(i, http.MethodPost, "/v1/capacity/acquire", tok, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "a", WorkItemID: "w",
				OwnerDigest: capacity.OwnerDigest(p.id), IdempotencyKey: "k-" + p.id, TTLMs: 60_000,
				Demands: []capacity.Demand{{CellID: "cell-ctl-a", ResourceClass: "gpu", Amount: 1}}})
			do(i, http.MethodPost, "/v1/capacity/status", tok, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "b", MaxCount: 5})
			do(i, http.MethodGet, "/v1/changes?limit=5", tok, nil)
			do(i, http.MethodGet, "/v1/nodes/get?node_id=x", tok, nil)
			do(i, http.MethodPost, "/v1/internal/apply", tok, []byte{0x80})
			do(i, http.MethodPost, "/v1/cluster/join", tok, cluster.JoinRequest{ID: "x", RaftAddr: "x", APIAddr: "x"})
		}
	}
	// Credentials presented the wrong way, or where they do not belong.
	for _, tok := range secrets {
		for _, h := range []string{"Bearer " + tok, "Basic " + tok, "bearer " + tok + " extra", tok, "Bearer " + tok + "\x7f"} {
			req, _ := http.NewRequest(http.MethodGet, isoURL(c, follower, "/v1/cluster/status"), nil)
			req.Header.Set("Authorization", h)
			if resp, err := isoClient.Do(req); err == nil {
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				record(isoParse(t, resp, raw))
			}
		}
		do(follower, http.MethodPost, "/v1/internal/query", tok, []byte{0x80})
		// A token a client misplaces into a parameter may be echoed back
		// to that client, but it must not reach the logs.
		isoDo(t, isoClient, http.MethodGet, isoURL(c, follower, "/v1/changes?after="+tok), isoToken("mem-a"), nil)
		isoDo(t, isoClient, http.MethodGet, isoURL(c, follower, "/v1/concepts/get?concept_id="+tok+"&tenant_ref=a"), isoToken("mem-a"), nil)
		isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, "/v1/concepts/reserve"), isoToken("mem-a"), map[string]any{"token": tok})
	}
	// Peer-only routes with the peer token and a malformed body, through
	// a follower and the leader.
	for _, i := range []int{follower, leader} {
		do(i, http.MethodPost, "/v1/internal/apply", c.PeerToken, []byte{0x80})
		do(i, http.MethodPost, "/v1/internal/query", c.PeerToken, []byte("not msgpack"))
		do(i, http.MethodPost, "/v1/cluster/join", c.PeerToken, cluster.JoinRequest{ID: "bad id\n", RaftAddr: "x", APIAddr: "x"})
	}
	// A reload, logged.
	for _, i := range c.Running() {
		if err := c.Node(i).SetPrincipals(isoRegistry(t, nil)); err != nil {
			t.Fatal(err)
		}
	}
	// A node with the wrong peer token tries to join: refused, and its
	// failure (logged and returned) does not show either token.
	const wrongPeer = "hardening-wrong-peer-token-31337"
	secrets = append(secrets, wrongPeer)
	cfg := cluster.DefaultConfig()
	cfg.Domains = builtin.Domains()
	cfg.ID, cfg.DataDir = "intruder", t.TempDir()
	cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.NoSyncUnsafe = true
	cfg.Principals, cfg.PeerToken = isoRegistry(t, nil), wrongPeer
	cfg.Join = []string{c.URL(leader)}
	cfg.Logger = logger
	intruder, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := intruder.Start(ctx); err == nil {
		_ = intruder.Close()
		t.Fatal("a node with the wrong peer token joined")
	} else {
		answers = append(answers, err.Error())
	}
	for _, m := range c.Node(leader).Status().Members {
		if m.ID == "intruder" {
			t.Errorf("the intruder is a member: %+v", m)
		}
	}

	// What the nodes expose.
	var metricsText strings.Builder
	for _, i := range c.Running() {
		if r := do(i, http.MethodGet, "/metrics", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("/metrics of a node with principals answered %d without a credential", r.status)
		}
		r := do(i, http.MethodGet, "/metrics", isoToken("admin"), nil)
		metricsText.Write(r.body)
		do(i, http.MethodGet, "/v1/cluster/status", isoToken("admin"), nil)
	}
	// A backup is replicated state: credentials never reach it.
	var backup bytes.Buffer
	if err := c.Node(c.WaitLeader(10*time.Second)).Backup(context.Background(), &backup); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if reserved := "ISO-" + strconv.Itoa(10+leader); !bytes.Contains(backup.Bytes(), []byte(reserved)) {
		t.Errorf("the backup lacks the reservation %s: capture is broken", reserved)
	}
	for _, s := range secrets {
		if bytes.Contains(backup.Bytes(), []byte(s)) {
			t.Errorf("the backup holds a secret %q", s)
		}
	}
	logText := logs.String()
	// Positive controls: the sinks did capture.
	for _, want := range []string{"node started", "principals reloaded", "join attempt failed"} {
		if !strings.Contains(logText, want) {
			t.Errorf("the captured logs lack %q: capture is broken", want)
		}
	}
	if !strings.Contains(metricsText.String(), "arbiter_http_requests_total") {
		t.Error("the captured metrics lack arbiter_http_requests_total")
	}
	if len(answers) < 100 {
		t.Errorf("only %d answers captured", len(answers))
	}
	for _, s := range secrets {
		if strings.Contains(logText, s) {
			i := strings.Index(logText, s)
			t.Errorf("the logs hold a secret: ...%s...", logText[max(0, i-200):min(len(logText), i+len(s)+50)])
		}
		if strings.Contains(metricsText.String(), s) {
			t.Errorf("the metrics hold a secret %q", s)
		}
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Errorf("an answer holds a secret: %.400s", a)
				break
			}
		}
	}
}
