package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// scriptedVerify is a confirmation the test ends: each call announces
// itself on started and returns what the test sends on answer.
type scriptedVerify struct {
	started chan int
	answer  chan error
	mu      sync.Mutex
	calls   int
}

func newScriptedVerify() *scriptedVerify {
	return &scriptedVerify{started: make(chan int, 100), answer: make(chan error)}
}

func (s *scriptedVerify) verify() error {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	s.started <- n
	return <-s.answer
}

func waitStarted(t *testing.T, s *scriptedVerify, want int) {
	t.Helper()
	select {
	case n := <-s.started:
		if n != want {
			t.Fatalf("confirmation %d started, want %d", n, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("confirmation %d never started", want)
	}
}

// A read that arrives while a confirmation runs waits for the next one
// (the running one may predate a newer leader); every read that arrives
// meanwhile shares that next one; an error reaches every read of its
// round.
func TestConfirmationsStartAfterTheReadAndAreShared(t *testing.T) {
	s := newScriptedVerify()
	c := &leaderConfirmer{verify: s.verify}
	ctx := context.Background()

	first := make(chan error, 1)
	go func() { first <- c.confirm(ctx) }()
	waitStarted(t, s, 1)

	const later = 50
	results := make(chan error, later)
	for range later {
		go func() { results <- c.confirm(ctx) }()
	}
	time.Sleep(50 * time.Millisecond) // let them all join the waiting round
	s.answer <- nil
	if err := <-first; err != nil {
		t.Fatalf("first read: %v", err)
	}
	select {
	case err := <-results:
		t.Fatalf("a read that arrived during confirmation 1 returned with it (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}

	waitStarted(t, s, 2)
	refused := errors.New("not the leader")
	s.answer <- refused
	for range later {
		if err := <-results; !errors.Is(err, refused) {
			t.Fatalf("a read of round 2 got %v, want %v", err, refused)
		}
	}
	select {
	case n := <-s.started:
		t.Fatalf("confirmation %d started with no read waiting", n)
	case <-time.After(100 * time.Millisecond):
	}
	if s.calls != 2 {
		t.Fatalf("%d confirmations for %d reads, want 2", s.calls, later+1)
	}
}

// A read whose context ends stops waiting; the confirmer keeps serving.
func TestConfirmationWaitEndsWithTheContext(t *testing.T) {
	s := newScriptedVerify()
	c := &leaderConfirmer{verify: s.verify}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.confirm(ctx) }()
	waitStarted(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	s.answer <- nil
	go func() { done <- c.confirm(context.Background()) }()
	waitStarted(t, s, 2)
	s.answer <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
