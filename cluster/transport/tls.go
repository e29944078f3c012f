package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// TLSConfig turns on TLS for everything a node serves and dials: the raft
// transport, the HTTP API, forwarding and joins. Nodes authenticate each
// other with certificates signed by PeerCAs: raft connections without one
// are refused during the handshake, and the node-to-node HTTP endpoints
// refuse callers that did not present one. Client certificates signed by
// ClientCAs (optional) identify principals (identity.PrincipalConfig
// CertSHA256).
type TLSConfig struct {
	// Certificate is this node's certificate and key, used both as server
	// and as client. It must be signed by one of PeerCAs.
	Certificate tls.Certificate
	PeerCAs     *x509.CertPool
	ClientCAs   *x509.CertPool
}

// LoadTLS reads PEM files into a TLSConfig; clientCAFile may be empty.
func LoadTLS(certFile, keyFile, peerCAFile, clientCAFile string) (*TLSConfig, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS key pair: %w", err)
	}
	peers, err := loadPool(peerCAFile)
	if err != nil {
		return nil, err
	}
	c := &TLSConfig{Certificate: cert, PeerCAs: peers}
	if clientCAFile != "" {
		if c.ClientCAs, err = loadPool(clientCAFile); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cluster: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: no certificate in %s", file)
	}
	return pool, nil
}

// Validate checks that c names a certificate and the peer CAs.
func (c *TLSConfig) Validate() error {
	if c.PeerCAs == nil || len(c.Certificate.Certificate) == 0 {
		return errors.New("TLS needs this node's certificate and the peer CAs")
	}
	return nil
}

// VerifyPeer checks a presented chain against the peer CAs. Nodes are
// identified by the CA that signed them, not by host name, so that an
// address can change without reissuing certificates.
func (c *TLSConfig) VerifyPeer(certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return errors.New("no certificate presented")
	}
	inter := x509.NewCertPool()
	for _, ic := range certs[1:] {
		inter.AddCert(ic)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: c.PeerCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

// PeerClientConfig is what a node presents and checks when it dials
// another node.
func (c *TLSConfig) PeerClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.Certificate},
		// The chain is checked against the peer CAs below instead of the
		// default host name check.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return c.VerifyPeer(cs.PeerCertificates)
		},
	}
}

// raftServerConfig admits only nodes to the raft port.
func (c *TLSConfig) raftServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.Certificate},
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return c.VerifyPeer(cs.PeerCertificates)
		},
	}
}

// APIServerConfig accepts any client on the HTTP API; a certificate, if
// presented, must be a node's or a client CA's. What a caller may do is
// decided per request (see authenticate).
func (c *TLSConfig) APIServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.Certificate},
		ClientAuth:   tls.RequestClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || c.VerifyPeer(cs.PeerCertificates) == nil {
				return nil
			}
			if c.ClientCAs == nil {
				return errors.New("client certificate from an unknown CA")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: c.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			return err
		},
	}
}

// TLSStreamLayer is a raft.StreamLayer over mutual TLS.
type TLSStreamLayer struct {
	net.Listener
	advertise net.Addr
	dial      *tls.Config
}

var _ raft.StreamLayer = (*TLSStreamLayer)(nil)

func NewTLSStreamLayer(bind, advertise string, c *TLSConfig) (*TLSStreamLayer, error) {
	ln, err := tls.Listen("tcp", bind, c.raftServerConfig())
	if err != nil {
		return nil, err
	}
	var adv net.Addr = ln.Addr()
	if advertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", advertise); err != nil {
			ln.Close()
			return nil, err
		}
	} else if tcp, ok := adv.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s is not advertisable; set RaftAdvertise", bind)
	}
	return &TLSStreamLayer{Listener: ln, advertise: adv, dial: c.PeerClientConfig()}, nil
}

func (l *TLSStreamLayer) Addr() net.Addr { return l.advertise }

// handshakeTimeout bounds a raft TLS handshake: a connection that does not
// complete one in time is closed instead of holding a goroutine forever.
var handshakeTimeout = 10 * time.Second

// Accept returns connections whose first read or write runs the handshake
// under handshakeTimeout (raft reads without deadlines, and handshaking in
// Accept itself would let one slow dialer stall every other).
func (l *TLSStreamLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakeConn{Conn: c.(*tls.Conn)}, nil
}

type handshakeConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *handshakeConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		if c.err = c.Conn.HandshakeContext(ctx); c.err != nil {
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *handshakeConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (l *TLSStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(address), l.dial)
}
