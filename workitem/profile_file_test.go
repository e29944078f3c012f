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
	"github.com/arbiterhq/arbiter/log"
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
	writeProfiles(t, path, workitem.ProfileFile{Profiles: []workitem.Profile{completeProfile("p", "v1"), {Name: "draft", Version: "0"}}})
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
	// A reload of a file without a newer file_version keeps the
	// cluster's set; one with a newer file_version replaces it.
	dark := completeProfile("p", "v1")
	dark.Mode = workitem.ModeDark
	writeProfiles(t, path, workitem.ProfileFile{Profiles: []workitem.Profile{dark}})
	reloaded := len(l.Log())
	if err := d.Load(); err != nil { // SIGHUP
		t.Fatal(err)
	}
	waitSeed(t, l, reloaded)
	waitProfiles("draft: p:enabled")
	writeProfiles(t, path, workitem.ProfileFile{FileVersion: 1, Profiles: []workitem.Profile{dark}})
	if err := d.Load(); err != nil { // SIGHUP
		t.Fatal(err)
	}
	waitProfiles("p:dark")
}

// waitSeed waits until l's log holds a profile set of version 2 (a seed
// a loader proposed, which the FSM answered) after its first from
// entries.
func waitSeed(t *testing.T, l *fsmtest.Local, from int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries := l.Log()
		for _, e := range entries[min(from, len(entries)):] {
			if cmd, err := log.Decode(e.Data); err == nil && cmd.Type == workitem.CmdSetProfiles && cmd.Version == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no seed in the log after entry %d", from)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startLoader runs a fresh domain (a node starting) with
// --reservation-profiles path on l until the test ends.
func startLoader(t *testing.T, l *fsmtest.Local, path string) {
	t.Helper()
	d := workitem.Domain()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	d.Flags(fs)
	if err := fs.Parse([]string{"--reservation-profiles", path}); err != nil {
		t.Fatal(err)
	}
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Start(ctx, localHost{l}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Issue 40 item 9: the replicated set is the one source of truth. A
// node's file seeds it only when the cluster has none; after an admin
// set every profile dark through the API, a node that restarts with its
// file leaves them dark; a file with a newer file_version, loaded on
// purpose, replaces the set; the answer says where the set came from.
func TestProfileFileNeverUndoesTheAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	writeProfiles(t, path, workitem.ProfileFile{Profiles: []workitem.Profile{completeProfile("p", "v1")}})
	l, svc := newEnabled(t)
	restart := func() { from := len(l.Log()); startLoader(t, l, path); waitSeed(t, l, from) }
	modes := func() (string, *workitem.ProfilesResult) {
		t.Helper()
		res, err := svc.Profiles(bg, fsm.Linearizable)
		noErr(t, "profiles", err)
		var out []string
		for _, p := range res.Profiles {
			out = append(out, p.Name+":"+p.Mode)
		}
		return strings.Join(out, " "), res
	}
	restart()
	if got, res := modes(); got != "p:enabled" || res.Source != workitem.ProfileSourceFile {
		t.Fatalf("the first seed: %s from %q, want p:enabled from the file", got, res.Source)
	}
	dark := completeProfile("p", "v1")
	dark.Mode = workitem.ModeDark
	_, err := svc.SetProfiles(as(ops), workitem.ProfilesRequest{Profiles: []workitem.Profile{dark}})
	noErr(t, "set dark", err)
	restart()
	if got, res := modes(); got != "p:dark" || res.Source != workitem.ProfileSourceAPI {
		t.Fatalf("after a restart: %s from %q, want p:dark from the API", got, res.Source)
	}
	// An admin's empty set is a set too.
	_, err = svc.SetProfiles(as(ops), workitem.ProfilesRequest{})
	noErr(t, "set none", err)
	restart()
	if got, _ := modes(); got != "" {
		t.Fatalf("after a restart: %s, want the admin's empty set", got)
	}
	writeProfiles(t, path, workitem.ProfileFile{FileVersion: 2, Profiles: []workitem.Profile{completeProfile("p", "v2")}})
	restart()
	if got, res := modes(); got != "p:enabled" || res.Source != workitem.ProfileSourceFile || res.FileVersion != 2 || res.Profiles[0].Version != "v2" {
		t.Fatalf("a newer file: %s %+v, want p v2 from file version 2", got, res)
	}
	_, err = svc.SetProfiles(as(ops), workitem.ProfilesRequest{Profiles: []workitem.Profile{dark}})
	noErr(t, "set dark again", err)
	restart() // the same file version 2 again
	if got, res := modes(); got != "p:dark" || res.FileVersion != 2 {
		t.Fatalf("file version 2 again: %s %+v, want the admin's set kept", got, res)
	}
}
