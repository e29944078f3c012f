package workitem_test

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

// localHost is a domain.Host over a bare FSM.
type localHost struct{ *fsmtest.Local }

func (h localHost) Adapter(string) domain.Backend { return h }
func (h localHost) Logger() *slog.Logger          { return slog.New(slog.DiscardHandler) }

func writeProfiles(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// --reservation-profiles: Load reads the file strictly (an unknown field
// or a bad bound stops the server; on SIGHUP it keeps the previous set),
// Start proposes it once the cluster takes it and again after a reload;
// empty fields are kept as fail-closed markers.
func TestReservationProfilesFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.json")
	d := workitem.Domain()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	d.Flags(fs)
	if err := fs.Parse([]string{"--reservation-profiles", path}); err != nil {
		t.Fatal(err)
	}
	if err := d.Load(); err == nil {
		t.Fatal("a missing file loads")
	}
	for what, body := range map[string]string{
		"an unknown field":  `{"profiles":[{"name":"p","version":"1","turbo":true}]}`,
		"a negative weight": `{"profiles":[{"name":"p","version":"1","weights":{"cpu":-1,"memory":0,"disk":0,"process":0}}]}`,
		"an unknown mode":   `{"profiles":[{"name":"p","version":"1","mode":"on"}]}`,
		"not JSON":          `profiles:`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := d.Load(); err == nil {
			t.Errorf("%s: loaded", what)
		}
	}
	writeProfiles(t, path, workitem.ProfilesRequest{Profiles: []workitem.Profile{completeProfile("p", "v1"), {Name: "draft", Version: "0"}}})
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}

	l, err := fsmtest.New(workitem.Module())
	if err != nil {
		t.Fatal(err)
	}
	enable(t, l)
	svc := workitem.NewService(l, l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Start(ctx, localHost{l}); close(done) }()
	defer func() { cancel(); <-done }()
	waitProfiles := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err := svc.Profiles(bg, fsm.Linearizable)
			var names []string
			if err == nil {
				for _, p := range res.Profiles {
					names = append(names, p.Name+":"+p.Mode)
				}
			}
			if strings.Join(names, " ") == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("profiles %v (%v), want %s", names, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitProfiles("draft: p:enabled")
	res, _ := svc.Profiles(bg, fsm.Linearizable)
	if res.Profiles[0].Complete || len(res.Profiles[0].Missing) == 0 {
		t.Fatalf("an empty profile is complete: %+v", res.Profiles[0])
	}
	dark := completeProfile("p", "v1")
	dark.Mode = workitem.ModeDark
	writeProfiles(t, path, workitem.ProfilesRequest{Profiles: []workitem.Profile{dark}})
	if err := d.Load(); err != nil { // SIGHUP
		t.Fatal(err)
	}
	waitProfiles("p:dark")
}
