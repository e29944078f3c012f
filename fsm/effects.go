package fsm

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// EffectFailure is the last effect that failed on this replica (see
// Effect): what it was, the error, the applied index it ran at and when.
// Effects fail closed, so a failure changes no state and no result; this
// is how an operator learns of one without reading logs.
type EffectFailure struct {
	Effect string    `json:"effect"`
	Error  string    `json:"error"`
	Index  uint64    `json:"index"`
	At     time.Time `json:"at"`
}

// EffectState is what the last effect of a key did on this replica (see
// Effect): its name, its key, the applied index it ran at, and the error
// of its last attempt ("" once it succeeded, by its first run or a retry).
type EffectState struct {
	Effect  string `json:"effect"`
	Key     string `json:"key"`
	Index   uint64 `json:"index"`
	Error   string `json:"error,omitempty"`
	Retries uint64 `json:"retries,omitempty"`
}

// EffectReporter is a backend that runs effects itself (a cluster node,
// an FSM), for a service that must tell its caller what they did here.
type EffectReporter interface {
	// EffectState waits until the effects of every entry up to index
	// have run here (or ctx ends: unavailable) and returns the state of
	// key's last effect if it ran at index or later, nil if none did.
	EffectState(ctx context.Context, key string, index uint64) (*EffectState, error)
	// FailingEffects lists the keyed effects whose key starts with
	// prefix that failed here and have not succeeded since (they are
	// being retried), by key.
	FailingEffects(prefix string) []EffectState
}

var _ EffectReporter = (*FSM)(nil)

// Bounds of keyed effects.
const (
	// maxKeyedEffects bounds the keys whose outcome a replica keeps
	// (projection's 1024 targets fit). When it is full, the key of the
	// oldest effect that succeeded makes room; when every kept key is
	// failing, a new key's failure is logged and counted but not retried.
	maxKeyedEffects = 4096
	// Retries back off from minEffectRetry, doubling after every pass in
	// which one failed, to maxEffectRetry; a pass retries at most
	// maxRetriesPerPass effects, those tried longest ago first, so that a
	// pass stays short however many keys fail.
	minEffectRetry    = 250 * time.Millisecond
	maxEffectRetry    = 30 * time.Second
	maxRetriesPerPass = 64
	// maxFailingReported bounds the failing effects the status lists.
	maxFailingReported = 16
)

// keyedEffects is what keyed effects did on this replica, by key.
type keyedEffects struct {
	mu    sync.Mutex
	byKey map[string]*keyedEffect
	// wake has room for one signal: a keyed effect failed.
	wake chan struct{}
	// at is the index through which every effect has run (the applied
	// index, except while a restore runs its Restored hooks).
	at                     atomic.Uint64
	retries, retryFailures atomic.Uint64
}

type keyedEffect struct {
	state EffectState
	run   func() error // the failed effect, nil once one succeeded
	gen   uint64       // changes with every effect of the key
	tried time.Time    // its last attempt, for the order of retries
}

// advance records that index is applied and its effects have run.
func (f *FSM) advance(index uint64) {
	f.keyed.at.Store(index)
	f.applied.Store(index)
}

// runEffects runs committed commands' effects in order; index is the
// applied index they follow. A failure or a panic is logged, counted and
// kept as the last failure (and, for a keyed effect, as its key's
// failure, to retry); it changes nothing else.
func (f *FSM) runEffects(effects []Effect, index uint64) {
	if len(effects) == 0 {
		return
	}
	f.effectMu.Lock()
	defer f.effectMu.Unlock()
	for _, e := range effects {
		f.effectRuns.Add(1)
		err := runEffect(e)
		if err != nil {
			f.effectFailed(e.Name, index, err)
		}
		if e.Key != "" {
			f.recordKeyed(e, index, err)
		}
	}
}

func (f *FSM) effectFailed(name string, index uint64, err error) {
	f.effectFailures.Add(1)
	// Wall time is only reported, never part of the state.
	f.lastEffectFailure.Store(&EffectFailure{Effect: name, Error: err.Error(), Index: index, At: time.Now().UTC()})
	f.logger.Error("effect failed", "effect", name, "index", index, "error", err)
}

func runEffect(e Effect) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return e.Run()
}

// recordKeyed keeps what e, which ran at index, did as its key's state;
// the caller holds effectMu.
func (f *FSM) recordKeyed(e Effect, index uint64, err error) {
	k := &f.keyed
	k.mu.Lock()
	defer k.mu.Unlock()
	ke := k.byKey[e.Key]
	if ke == nil {
		if len(k.byKey) >= maxKeyedEffects && !k.evictLocked() {
			f.logger.Error("keyed effect not kept: every kept key is failing", "effect", e.Name, "key", e.Key, "kept", len(k.byKey))
			return
		}
		ke = &keyedEffect{}
		k.byKey[e.Key] = ke
	}
	ke.gen++
	ke.state = EffectState{Effect: e.Name, Key: e.Key, Index: index}
	ke.run, ke.tried = nil, time.Now()
	if err != nil {
		ke.state.Error, ke.run = err.Error(), e.Run
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

// evictLocked drops the key of the oldest effect that succeeded; false
// if every key is failing.
func (k *keyedEffects) evictLocked() bool {
	var oldest string
	var at uint64
	for key, ke := range k.byKey { // order-free: a minimum, ties broken by key
		if ke.run == nil && (oldest == "" || ke.state.Index < at || ke.state.Index == at && key < oldest) {
			oldest, at = key, ke.state.Index
		}
	}
	if oldest == "" {
		return false
	}
	delete(k.byKey, oldest)
	return true
}

// resetKeyedEffects forgets every key's state (a restore replaced the
// state they followed).
func (f *FSM) resetKeyedEffects() {
	f.effectMu.Lock()
	defer f.effectMu.Unlock()
	f.keyed.mu.Lock()
	defer f.keyed.mu.Unlock()
	clear(f.keyed.byKey)
}

// EffectState implements EffectReporter.
func (f *FSM) EffectState(ctx context.Context, key string, index uint64) (*EffectState, error) {
	for {
		ch := f.Changed()
		if f.keyed.at.Load() >= index {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, errs.Errorf(errs.CodeUnavailable, "waiting for the effects of index %d: %v", index, ctx.Err())
		}
	}
	f.keyed.mu.Lock()
	defer f.keyed.mu.Unlock()
	ke := f.keyed.byKey[key]
	if ke == nil || ke.state.Index < index {
		return nil, nil
	}
	st := ke.state
	return &st, nil
}

// FailingEffects implements EffectReporter.
func (f *FSM) FailingEffects(prefix string) []EffectState {
	f.keyed.mu.Lock()
	defer f.keyed.mu.Unlock()
	var out []EffectState
	for key, ke := range f.keyed.byKey { // order-free: sorted below
		if ke.run != nil && strings.HasPrefix(key, prefix) {
			out = append(out, ke.state)
		}
	}
	slices.SortFunc(out, func(a, b EffectState) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// RetryEffects retries failed keyed effects until ctx ends: after a
// failure it waits minEffectRetry, then retries every failing effect (at
// most maxRetriesPerPass a pass), and waits twice as long after a pass in
// which one failed again, up to maxEffectRetry. Each retry runs alone
// (never beside the FSM's own effects) and only if no later effect of
// its key has run meanwhile. The node runs it for its lifetime.
func (f *FSM) RetryEffects(ctx context.Context) {
	wait := minEffectRetry
	for {
		if len(f.FailingEffects("")) == 0 {
			wait = minEffectRetry
			select {
			case <-f.keyed.wake:
			case <-ctx.Done():
				return
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		if f.retryPass() {
			wait = min(2*wait, maxEffectRetry)
		} else {
			wait = minEffectRetry
		}
	}
}

// retryPass retries the failing keyed effects tried longest ago; it
// reports whether one failed again.
func (f *FSM) retryPass() (failed bool) {
	type job struct {
		key   string
		gen   uint64
		tried time.Time
	}
	k := &f.keyed
	k.mu.Lock()
	var jobs []job
	for key, ke := range k.byKey { // order-free: sorted below
		if ke.run != nil {
			jobs = append(jobs, job{key, ke.gen, ke.tried})
		}
	}
	k.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int {
		return cmp.Or(a.tried.Compare(b.tried), strings.Compare(a.key, b.key))
	})
	for _, j := range jobs[:min(len(jobs), maxRetriesPerPass)] {
		if f.retryOne(j.key, j.gen) != nil {
			failed = true
		}
	}
	return failed
}

// retryOne runs key's failed effect again if it is still generation
// gen, and keeps the outcome.
func (f *FSM) retryOne(key string, gen uint64) error {
	f.effectMu.Lock()
	defer f.effectMu.Unlock()
	k := &f.keyed
	k.mu.Lock()
	ke := k.byKey[key]
	if ke == nil || ke.gen != gen || ke.run == nil {
		k.mu.Unlock()
		return nil // a later effect of the key ran, or a restore
	}
	e := Effect{Name: ke.state.Effect, Run: ke.run, Key: key}
	index := ke.state.Index
	k.mu.Unlock()

	err := runEffect(e)
	k.retries.Add(1)
	k.mu.Lock()
	ke.state.Retries++
	ke.tried = time.Now()
	if err == nil {
		ke.state.Error, ke.run = "", nil
	} else {
		ke.state.Error = err.Error()
	}
	retries := ke.state.Retries
	k.mu.Unlock()
	if err != nil {
		k.retryFailures.Add(1)
		f.logger.Warn("effect retry failed", "effect", e.Name, "key", key, "index", index, "retries", retries, "error", err)
		return err
	}
	f.logger.Info("effect retry succeeded", "effect", e.Name, "key", key, "index", index, "retries", retries)
	return nil
}

// EffectRuns and EffectFailures count effects run and failed (metrics).
func (f *FSM) EffectRuns() uint64     { return f.effectRuns.Load() }
func (f *FSM) EffectFailures() uint64 { return f.effectFailures.Load() }

// EffectRetries counts retries of failed keyed effects, and
// EffectRetryFailures those that failed again (metrics).
func (f *FSM) EffectRetries() uint64       { return f.keyed.retries.Load() }
func (f *FSM) EffectRetryFailures() uint64 { return f.keyed.retryFailures.Load() }

// FailingEffectsReport is how many keyed effects are failing here and
// the first of them by key (at most maxFailingReported), for a status.
func (f *FSM) FailingEffectsReport() (count int, first []EffectState) {
	all := f.FailingEffects("")
	return len(all), all[:min(len(all), maxFailingReported)]
}

// LastEffectFailure is the last effect that failed here, nil if none has.
func (f *FSM) LastEffectFailure() *EffectFailure { return f.lastEffectFailure.Load() }
