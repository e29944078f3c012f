package clustertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// network records which directed links between nodes are cut. Raft links
// are cut on the inmem transports; HTTP links are cut here, at dial time
// and on every read and write of an open connection.
type network struct {
	mu      sync.Mutex
	cut     map[[2]int]bool
	apiAddr map[string]int // API host:port -> node index
	conns   map[*faultConn]struct{}
}

func newNetwork() *network {
	return &network{cut: map[[2]int]bool{}, apiAddr: map[string]int{}, conns: map[*faultConn]struct{}{}}
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
			fc := &faultConn{Conn: c, nw: nw, from: from, to: to}
			nw.mu.Lock()
			nw.conns[fc] = struct{}{}
			nw.mu.Unlock()
			return fc, nil
		},
		MaxIdleConnsPerHost: 16,
	}}
}

type faultConn struct {
	net.Conn
	nw       *network
	from, to int
}

var errPartitioned = errors.New("clustertest: link cut")

func (c *faultConn) Read(b []byte) (int, error) {
	if c.nw.blocked(c.to, c.from) {
		_ = c.Close()
		return 0, errPartitioned
	}
	return c.Conn.Read(b)
}

func (c *faultConn) Write(b []byte) (int, error) {
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
