package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
)

const cmdKeyedEffect log.Type = 907 // payload: the key its effect writes

// disk is what keyed effects write: per key, the index of the last
// effect that wrote it; it fails while broken.
type disk struct {
	mu      sync.Mutex
	broken  atomic.Bool
	written map[string]uint64
}

func (d *disk) write(key string, index uint64) error {
	if d.broken.Load() {
		return errors.New("disk broken")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.written[key] = max(d.written[key], index)
	return nil
}

func (d *disk) of(key string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.written[key]
}

func keyedModule(d *disk) fsm.Module {
	return fsm.Module{
		Name:  "keyed",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Commands: []fsm.CommandSpec{{Type: cmdKeyedEffect, Name: "keyed_effect", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			var key string
			if err := fsm.DecodePayload(cmd.Payload, &key); err != nil {
				return nil, err
			}
			index := tx.Index
			tx.AfterCommitKeyed("write", key, func() error { return d.write(key, index) })
			return nil, nil
		}}},
	}
}

// waitFor polls cond, which follows the FSM's state, until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A keyed effect that fails is kept as its key's failing effect (the
// newest of the key replaces an older one), reported by EffectState and
// FailingEffects, and retried off the FSM's goroutine until it succeeds;
// a later effect of the key that succeeds ends the failure; a restored
// state drops the failures of the state it replaced.
func TestKeyedEffectsAreRetriedUntilTheySucceed(t *testing.T) {
	d := &disk{written: map[string]uint64{}}
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{keyedModule(d)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d.broken.Store(true)
	f.Apply(entry(t, 1, cmdKeyedEffect, "a"))
	f.Apply(entry(t, 2, cmdKeyedEffect, "b"))
	f.Apply(entry(t, 3, cmdKeyedEffect, "a"))
	want := []fsm.EffectState{
		{Effect: "write", Key: "a", Index: 3, Error: "disk broken"},
		{Effect: "write", Key: "b", Index: 2, Error: "disk broken"},
	}
	if diff := cmp.Diff(want, f.FailingEffects("")); diff != "" {
		t.Fatalf("failing effects (-want +got):\n%s", diff)
	}
	if got := f.FailingEffects("b"); len(got) != 1 || got[0].Key != "b" {
		t.Fatalf("failing effects of prefix b: %+v", got)
	}
	if st, err := f.EffectState(ctx, "a", 1); err != nil || st == nil || st.Index != 3 || st.Error != "disk broken" {
		t.Fatalf("state of a since 1: %+v %v", st, err)
	}
	if st, err := f.EffectState(ctx, "c", 1); err != nil || st != nil {
		t.Fatalf("state of a key no effect had: %+v %v", st, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := f.EffectState(short, "a", 4); err == nil {
		t.Fatal("the state of an index not applied yet answered")
	}
	if f.EffectFailures() != 3 || f.EffectRetries() != 0 {
		t.Fatalf("failures %d, retries %d", f.EffectFailures(), f.EffectRetries())
	}

	// Retries fail while the disk is broken, then succeed.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.RetryEffects(rctx) }()
	waitFor(t, "two failed retries", func() bool { return f.EffectRetryFailures() >= 2 })
	if got := len(f.FailingEffects("")); got != 2 {
		t.Fatalf("%d failing effects after failed retries", got)
	}
	d.broken.Store(false)
	waitFor(t, "the failing effects retried", func() bool { return len(f.FailingEffects("")) == 0 })
	if d.of("a") != 3 || d.of("b") != 2 {
		t.Fatalf("written: a at %d, b at %d; want 3 and 2", d.of("a"), d.of("b"))
	}
	if st, _ := f.EffectState(ctx, "a", 1); st == nil || st.Index != 3 || st.Error != "" {
		t.Fatalf("state of a after its retry: %+v", st)
	}
	stop()
	<-done

	// Without retries: a later effect of the key that succeeds ends the
	// failure.
	d.broken.Store(true)
	f.Apply(entry(t, 4, cmdKeyedEffect, "c"))
	if len(f.FailingEffects("")) != 1 {
		t.Fatalf("failing: %+v", f.FailingEffects(""))
	}
	d.broken.Store(false)
	f.Apply(entry(t, 5, cmdKeyedEffect, "c"))
	if got := f.FailingEffects(""); len(got) != 0 || d.of("c") != 5 {
		t.Fatalf("failing after a later success: %+v, c written at %d", got, d.of("c"))
	}

	// A restore drops the failures of the state it replaces.
	d.broken.Store(true)
	f.Apply(entry(t, 6, cmdKeyedEffect, "d"))
	snap := fsmtest.Snapshot(t, f)
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if got := f.FailingEffects(""); len(got) != 0 {
		t.Fatalf("failing after a restore: %+v", got)
	}
}
