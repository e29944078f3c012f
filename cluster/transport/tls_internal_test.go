package transport

import (
	"net"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/testcert"
)

// A connection to the raft port that never completes a TLS handshake is
// closed after handshakeTimeout instead of holding its goroutine.
func TestRaftTLSHandshakeTimesOut(t *testing.T) {
	old := handshakeTimeout
	handshakeTimeout = 200 * time.Millisecond
	defer func() { handshakeTimeout = old }()
	ca := testcert.NewCA(t, "peers")
	layer, err := NewTLSStreamLayer("127.0.0.1:0", "", &TLSConfig{Certificate: ca.Issue(t, "n1"), PeerCAs: ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer layer.Close()
	silent, err := net.Dial("tcp", layer.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	conn, err := layer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a connection that never handshook succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("handshake gave up after %v, want about %v", took, handshakeTimeout)
	}
}
