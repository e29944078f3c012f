package fsmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// updatePins rewrites the golden files of Pin (go test -run Pin -pin.update).
var updatePins = flag.Bool("pin.update", false, "rewrite the golden files of the answer pins (fsmtest.Pin)")

// PinDumpEnv names a directory into which Pin writes every answer it
// pinned, one line per command, to compare two binaries with diff when a
// pin breaks (the golden file holds only digests).
const PinDumpEnv = "ARBITER_PIN_DUMP"

// PinSet is a corpus of commands whose answers Pin pins: every payload of
// every type, sent by every principal, at every version from 1 to one
// above the newest the module serves, unkeyed and under each scope.
type PinSet struct {
	Types      []log.Type
	Payloads   map[log.Type][][]byte
	Principals []identity.Principal
	// Scopes are the idempotency scopes a keyed variant of each command
	// carries (under a key no other command has); none: every command is
	// sent unkeyed only.
	Scopes []string
	// Adapters are the adapters a command is sent through besides none
	// (log.Command.Adapter).
	Adapters []string
}

// Pin applies the corpus of set, in order, one command per entry, to f
// (which holds a seed state), and compares a digest of the answers of
// each command type (code, message and detail of an error; the result's
// bytes and Replayed of a success; the state hash at the end) with the
// golden file path. It pins which answer every input gets, so that a
// refactor of the handlers that changes any (an error's code, its
// message, which check refuses first) fails; with -pin.update it writes
// the file instead. stamp is the clock of the first command; each next
// one is 7ms later.
func Pin(t *testing.T, f *fsm.FSM, modules []fsm.Module, set PinSet, stamp int64, path string) {
	t.Helper()
	maxVersion := map[log.Type]uint16{}
	names := map[log.Type]string{}
	for _, m := range modules {
		for _, c := range m.Commands {
			maxVersion[c.Type], names[c.Type] = c.MaxVersion, c.Name
		}
	}
	type keyed struct{ scope, key string }
	keys := []keyed{{}}
	for _, s := range set.Scopes {
		keys = append(keys, keyed{s, "pin"}) // numbered per command below
	}
	adapters := append([]string{""}, set.Adapters...)
	sums := map[string]*pinSum{}
	var dump []string
	n := 0
	for _, typ := range set.Types {
		name := names[typ]
		if name == "" {
			name = fmt.Sprintf("type_%d", typ)
		}
		sum := &pinSum{h: sha256.New()}
		sums[name] = sum
		for pi, payload := range set.Payloads[typ] {
			for wi, who := range set.Principals {
				for v := uint16(1); v <= maxVersion[typ]+1; v++ {
					for ki, k := range keys {
						for _, ad := range adapters {
							n++
							cmd := log.Command{Type: typ, Version: v, Stamp: stamp + int64(n)*7, Principal: who,
								Adapter: ad, IdemScope: k.scope, Payload: payload}
							if k.key != "" {
								// A key of its own: the command reaches its
								// handler instead of the ledger's answer.
								cmd.IdemKey = fmt.Sprintf("%s-%d", k.key, n)
							}
							data, err := log.Encode(cmd)
							if err != nil {
								t.Fatalf("%s payload %d: %v", name, pi, err)
							}
							res, ok := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Response)
							if !ok || res == nil {
								t.Fatalf("%s payload %d: Apply returned no *fsm.Response", name, pi)
							}
							line := fmt.Sprintf("%s p%d w%d v%d k%d a%q: %s", name, pi, wi, v, ki, ad, answer(res))
							sum.add(line)
							dump = append(dump, line)
						}
					}
				}
			}
		}
	}
	if f.Panics() != 0 {
		t.Fatalf("%d handler panics", f.Panics())
	}
	_, hash, err := f.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range sortedKeys(sums) {
		got = append(got, fmt.Sprintf("%s %d %s", name, sums[name].n, hex.EncodeToString(sums[name].h.Sum(nil))[:24]))
	}
	got = append(got, fmt.Sprintf("state %d %x", n, hash[:12]))
	if dir := os.Getenv(PinDumpEnv); dir != "" {
		wd, _ := os.Getwd() // the package's directory names the dump
		out := filepath.Join(dir, filepath.Base(wd)+"-"+strings.ReplaceAll(filepath.Base(path), ".golden", ".answers"))
		if err := os.WriteFile(out, []byte(strings.Join(dump, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.Join(got, "\n") + "\n"
	if *updatePins {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -pin.update on a binary whose answers are right)", err)
	}
	if string(want) != text {
		t.Fatalf("the answers changed (set %s=dir on both binaries and diff the answers):\n got:\n%s\nwant:\n%s", PinDumpEnv, text, want)
	}
}

// pinSum digests the answers of one command type.
type pinSum struct {
	h interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	n int
}

func (s *pinSum) add(line string) {
	s.n++
	s.h.Write([]byte(line))
	s.h.Write([]byte{'\n'})
}

// answer is a response as a line: an error's code, message and detail,
// or a success's result digest.
func answer(res *fsm.Response) string {
	if res.Err != nil {
		detail, _ := json.Marshal(res.Err.Detail) // maps marshal in key order
		return fmt.Sprintf("%s %q %s i%d", res.Err.Code, res.Err.Message, detail, res.Index)
	}
	sum := sha256.Sum256(res.Result)
	return fmt.Sprintf("ok replayed=%t i%d %x", res.Replayed, res.Index, sum[:8])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
