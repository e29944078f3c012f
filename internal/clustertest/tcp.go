package clustertest

import (
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// faultStream is the raft.StreamLayer of a node in TCP mode: real
// loopback TCP, raft's own NetworkTransport on top (connection pool,
// pipelining, heartbeat fast path), and the network's faults on every
// connection the node dials. Raft's connections carry requests from the
// dialer and replies back, so the dialing side sees both directions: a
// cut link refuses the dial, and a cut made later closes the connection
// (network.setCut); a pause or delay holds each read and write
// (faultConn). Accepted connections are not wrapped: their dialer's side
// already is.
type faultStream struct {
	net.Listener
	nw   *network
	from int
}

var _ raft.StreamLayer = (*faultStream)(nil)

// newFaultStream listens on addr (127.0.0.1:0 for a new node, its old
// address for a restart).
func newFaultStream(nw *network, from int, addr string) (*faultStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &faultStream{Listener: ln, nw: nw, from: from}, nil
}

func (s *faultStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	// Every member's address is registered before it starts (a leader
	// dials a joining member at once). An unknown address is a node the
	// test started outside the cluster: reached without faults.
	to := s.nw.raftIndex(string(address))
	if to >= 0 && s.nw.blocked(s.from, to) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("partitioned")}
	}
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil || to < 0 {
		return c, err
	}
	return s.nw.track(&faultConn{Conn: c, nw: s.nw, from: s.from, to: to}), nil
}
