package clustertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// network records which directed links between nodes are cut, the delay
// every message suffers and which nodes are paused. In-memory raft links
// are cut on the inmem transports, and delayed or held by faultTransport;
// HTTP links, and raft links in TCP mode (faultStream), are cut, delayed
// and held here, at dial time and on every read and write of an open
// connection.
type network struct {
	mu       sync.Mutex
	cut      map[[2]int]bool
	apiAddr  map[string]int // API host:port -> node index
	raftAddr map[string]int // raft address (inmem name or TCP host:port) -> node index
	conns    map[*faultConn]struct{}
	delay    time.Duration         // each message waits up to this long
	paused   map[int]chan struct{} // closed when the node resumes
}

// maxHold bounds how long one message waits for a paused node, so that
// nothing in a test can hang on a pause the test forgot to end.
const maxHold = 30 * time.Second

func newNetwork() *network {
	return &network{cut: map[[2]int]bool{}, apiAddr: map[string]int{}, raftAddr: map[string]int{},
		conns: map[*faultConn]struct{}{}, paused: map[int]chan struct{}{}}
}

func (nw *network) setRaftAddr(i int, addr string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.raftAddr[addr] = i
}

// raftIndex is the node at a raft address, or -1.
func (nw *network) raftIndex(addr string) int {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if i, ok := nw.raftAddr[addr]; ok {
		return i
	}
	return -1
}

// hold is what a message from -> to goes through before it is sent: it
// waits while either end is paused (and is delivered, late, when both run
// again), then waits a random delay up to the current one.
func (nw *network) hold(from, to int) error {
	deadline := time.Now().Add(maxHold)
	for {
		nw.mu.Lock()
		gate := nw.paused[from]
		if gate == nil && to >= 0 {
			gate = nw.paused[to]
		}
		delay := nw.delay
		nw.mu.Unlock()
		if gate == nil {
			if delay > 0 {
				time.Sleep(rand.N(delay))
			}
			return nil
		}
		select {
		case <-gate:
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("clustertest: message %d -> %d held longer than %v by a pause", from, to, maxHold)
		}
	}
}

func (nw *network) setDelay(d time.Duration) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.delay = d
}

func (nw *network) pause(i int) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.paused[i] == nil {
		nw.paused[i] = make(chan struct{})
	}
}

func (nw *network) resume(i int) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if gate := nw.paused[i]; gate != nil {
		close(gate)
		delete(nw.paused, i)
	}
}

func (nw *network) isPaused(i int) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.paused[i] != nil
}

func (nw *network) setAPIAddr(i int, addr string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for a, j := range nw.apiAddr {
		if j == i {
			delete(nw.apiAddr, a)
		}
	}
	nw.apiAddr[addr] = i
}

func (nw *network) blocked(from, to int) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.cut[[2]int{from, to}]
}

// cutOneWay adds the directed link from -> to to the cut set.
func (nw *network) cutOneWay(from, to int) {
	nw.mu.Lock()
	cut := make(map[[2]int]bool, len(nw.cut)+1)
	for l := range nw.cut {
		cut[l] = true
	}
	nw.mu.Unlock()
	cut[[2]int{from, to}] = true
	nw.setCut(cut)
}

// setCut replaces the set of cut links and closes HTTP connections that
// cross a newly cut link.
func (nw *network) setCut(cut map[[2]int]bool) {
	nw.mu.Lock()
	nw.cut = cut
	var doomed []*faultConn
	for c := range nw.conns {
		if cut[[2]int{c.from, c.to}] || cut[[2]int{c.to, c.from}] {
			doomed = append(doomed, c)
		}
	}
	nw.mu.Unlock()
	for _, c := range doomed {
		_ = c.Close()
	}
}

// client returns the HTTP client node `from` uses to reach its peers.
func (nw *network) client(from int) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nw.mu.Lock()
			to, known := nw.apiAddr[addr]
			nw.mu.Unlock()
			if known && nw.blocked(from, to) {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("partitioned")}
			}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil || !known {
				return c, err
			}
			return nw.track(&faultConn{Conn: c, nw: nw, from: from, to: to}), nil
		},
		MaxIdleConnsPerHost: 16,
	}}
}

// track registers c, so that a cut of its link closes it.
func (nw *network) track(c *faultConn) *faultConn {
	nw.mu.Lock()
	nw.conns[c] = struct{}{}
	nw.mu.Unlock()
	return c
}

type faultConn struct {
	net.Conn
	nw       *network
	from, to int
}

var errPartitioned = errors.New("clustertest: link cut")

func (c *faultConn) Read(b []byte) (int, error) {
	if err := c.nw.hold(c.to, c.from); err != nil {
		_ = c.Close()
		return 0, err
	}
	if c.nw.blocked(c.to, c.from) {
		_ = c.Close()
		return 0, errPartitioned
	}
	return c.Conn.Read(b)
}

func (c *faultConn) Write(b []byte) (int, error) {
	if err := c.nw.hold(c.from, c.to); err != nil {
		_ = c.Close()
		return 0, err
	}
	if c.nw.blocked(c.from, c.to) {
		_ = c.Close()
		return 0, errPartitioned
	}
	return c.Conn.Write(b)
}

func (c *faultConn) Close() error {
	c.nw.mu.Lock()
	delete(c.nw.conns, c)
	c.nw.mu.Unlock()
	return c.Conn.Close()
}
