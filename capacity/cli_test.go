package capacity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// routeConn is a domain.Conn that sends CallJSON to the capacity routes
// over a bare FSM, as the binary's connection does to a node's API.
type routeConn struct {
	localHost
	mux *http.ServeMux
}

func (c routeConn) CallJSON(_ context.Context, method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	w := httptest.NewRecorder()
	c.mux.ServeHTTP(w, httptest.NewRequest(method, path, bytes.NewReader(b)))
	if w.Code/100 != 2 {
		var e struct{ Error *errs.Error }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil {
			return errs.Errorf(errs.CodeInternal, "%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return e.Error
	}
	return json.Unmarshal(w.Body.Bytes(), out)
}

// runCLI runs `arbiter capacity args...` against l and returns what it
// printed.
func runCLI(t *testing.T, l *fsmtest.Local, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	conn := routeConn{localHost: localHost{l}, mux: routesOver(l)}
	env := domain.CLIEnv{Stdout: &out, Stderr: &out,
		Dial: func() (domain.Conn, error) { return conn, nil },
		Print: func(v any) error {
			b, err := json.Marshal(v)
			out.Write(b)
			return err
		}}
	cmd := capacity.Domain().CLI.Command(env)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

// --graph names the graph every capacity command works in.
func TestCLIGraph(t *testing.T) {
	l, _ := newGatedService(t)
	steps := [][]string{
		{"cells", "--tenant", "t", "--graph", "g2", "--cell", "c", "--capacity", "gpu=2"},
		{"acquire", "--tenant", "t", "--graph", "g2", "--work-item", "w", "--demand", "c:gpu:2", "--idempotency-key", "k", "--owner", "agent"},
	}
	for _, args := range steps {
		if out, err := runCLI(t, l, args...); err != nil {
			t.Fatalf("capacity %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := runCLI(t, l, "status", "--tenant", "t", "--graph", "g2")
	if err != nil || !strings.Contains(out, `"graph_ref":"g2"`) || !strings.Contains(out, `"used":2`) {
		t.Fatalf("status of g2: %v\n%s", err, out)
	}
	out, err = runCLI(t, l, "status", "--tenant", "t")
	if err != nil || !strings.Contains(out, `"cells":[]`) {
		t.Fatalf("status of the default graph: %v\n%s", err, out)
	}
}
