package cluster

import (
	"context"
	"sync"
)

// leaderConfirmer shares leadership confirmations among concurrent
// linearizable reads (the read-index optimisation): instead of one
// VerifyLeader round trip to a quorum per read, every read that arrives
// while a round is running waits for the next round, and one round then
// serves all of them.
//
// A read may only use a round that started after the read began (one
// that started earlier could have been answered by a quorum before a new
// leader was elected and acknowledged a write the read must see). So a
// read joins the round that is waiting to start, never the running one;
// at most one round runs at a time and at most one waits, however many
// reads there are.
type leaderConfirmer struct {
	verify func() error // one confirmation by a quorum

	mu      sync.Mutex
	next    *confirmRound // the round that starts when the running one ends
	running bool
}

type confirmRound struct {
	done chan struct{}
	err  error
}

// confirm returns once a confirmation that started after confirm was
// called has ended, with its answer, or when ctx ends.
func (c *leaderConfirmer) confirm(ctx context.Context) error {
	c.mu.Lock()
	if c.next == nil {
		c.next = &confirmRound{done: make(chan struct{})}
	}
	r := c.next
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run starts the waiting round, one after another, until none waits.
func (c *leaderConfirmer) run() {
	for {
		c.mu.Lock()
		r := c.next
		c.next = nil
		if r == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		r.err = c.verify() // starts after every reader of r joined it
		close(r.done)
	}
}
