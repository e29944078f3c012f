package client

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of a Client.
const (
	// DefaultTimeout bounds every call whose options set no other
	// (the server's own default wait).
	DefaultTimeout = 10 * time.Second
	// DefaultConnectTimeout bounds one connection attempt, so that an
	// address that does not answer leaves time for the next one.
	DefaultConnectTimeout = 2 * time.Second
	// userAgent names the client to the server's logs.
	userAgent = "arbiter-client-go/0.1"
)

// Client is a client of an Arbiter cluster over its JSON HTTP API. It is
// safe for concurrent use; its services (Nodes, Concepts, ...) are views
// of it that share its connections.
type Client struct {
	bases          []string
	http           *http.Client
	token          string
	timeout        time.Duration
	connectTimeout time.Duration
	maxAttempts    int
	// current is the index of the address that answered last: the next
	// call starts there (sticky), and moves on only when it fails.
	current atomic.Uint32
}

// Option configures a Client (New).
type Option func(*settings) error

type settings struct {
	maxAttempts    int
	token          string
	timeout        time.Duration
	connectTimeout time.Duration
	tlsConfig      *tls.Config
	caFile         string
	certFile       string
	keyFile        string
	httpClient     *http.Client
}

// WithToken authenticates every call with a principal's bearer token.
func WithToken(token string) Option {
	return func(s *settings) error { s.token = token; return nil }
}

// WithTokenFile reads the bearer token from a file (surrounding
// whitespace removed), as ARBITER_TOKEN_FILE does for the command line.
func WithTokenFile(path string) Option {
	return func(s *settings) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("token file: %w", err)
		}
		s.token = strings.TrimSpace(string(b))
		return nil
	}
}

// WithTimeout bounds every call (all its attempts across addresses
// together); a call's context may bound it further. It must be positive.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d <= 0 {
			return errors.New("timeout must be positive: every call has a deadline")
		}
		s.timeout = d
		return nil
	}
}

// WithConnectTimeout bounds one connection attempt to one address
// (default DefaultConnectTimeout). Ignored with WithHTTPClient.
func WithConnectTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d <= 0 {
			return errors.New("connect timeout must be positive")
		}
		s.connectTimeout = d
		return nil
	}
}

// WithMaxAttempts bounds the sends of one call across the addresses
// (default MaxAttempts, within the per-call timeout): WithMaxAttempts(1) with one
// address asks that node once, so that a node that cannot be reached is
// reported at once (a probe of each member), not retried until the
// timeout.
func WithMaxAttempts(n int) Option {
	return func(s *settings) error {
		if n < 1 || n > MaxAttempts {
			return fmt.Errorf("max attempts must be 1..%d", MaxAttempts)
		}
		s.maxAttempts = n
		return nil
	}
}

// WithCAFile trusts the CA certificates in a PEM file (instead of the
// system's) for the nodes' certificates.
func WithCAFile(path string) Option {
	return func(s *settings) error { s.caFile = path; return nil }
}

// WithClientCert presents a client certificate (PEM files) to the nodes,
// for clusters that authenticate principals by certificate.
func WithClientCert(certFile, keyFile string) Option {
	return func(s *settings) error { s.certFile, s.keyFile = certFile, keyFile; return nil }
}

// WithTLSConfig uses cfg for https addresses (cloned; WithCAFile and
// WithClientCert add to the clone).
func WithTLSConfig(cfg *tls.Config) Option {
	return func(s *settings) error { s.tlsConfig = cfg.Clone(); return nil }
}

// WithHTTPClient sends every request with hc (its Transport and its
// Timeout; the TLS options are then the caller's to set on it). The
// client's per-call timeout still bounds every call.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) error {
		if hc == nil {
			return errors.New("http client is nil")
		}
		s.httpClient = hc
		return nil
	}
}

// New returns a client of the nodes at addrs: base URLs of their HTTP
// APIs ("http://10.0.0.1:8000", "https://..."), or host:port (http). A
// call goes to the address that answered last and, while an address
// cannot be reached, to the next; whichever node answers forwards writes
// and linearizable reads to the leader itself.
func New(addrs []string, opts ...Option) (*Client, error) {
	s := settings{timeout: DefaultTimeout, connectTimeout: DefaultConnectTimeout, maxAttempts: MaxAttempts}
	for _, o := range opts {
		if err := o(&s); err != nil {
			return nil, err
		}
	}
	c := &Client{token: s.token, timeout: s.timeout, connectTimeout: s.connectTimeout, maxAttempts: s.maxAttempts}
	for _, a := range addrs {
		for _, one := range strings.Split(a, ",") { // "a,b" as ARBITER_ADDR lists them
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			if !strings.Contains(one, "://") {
				one = "http://" + one
			}
			if !strings.HasPrefix(one, "http://") && !strings.HasPrefix(one, "https://") {
				return nil, fmt.Errorf("address %q: want http://host:port or https://host:port", one)
			}
			c.bases = append(c.bases, strings.TrimRight(one, "/"))
		}
	}
	if len(c.bases) == 0 {
		return nil, errors.New("no cluster address given")
	}
	if s.httpClient != nil {
		c.http = s.httpClient
		return c, nil
	}
	tlsCfg, err := s.tls()
	if err != nil {
		return nil, err
	}
	c.http = &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: s.connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: s.connectTimeout,
		ForceAttemptHTTP2:   true,
		// Keep-alive: enough idle connections per node for many
		// concurrent callers (net/http's default of 2 would make most
		// calls under load dial a connection of their own).
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	return c, nil
}

// tls builds the TLS configuration of the options (nil: the defaults).
func (s *settings) tls() (*tls.Config, error) {
	cfg := s.tlsConfig
	if s.caFile == "" && s.certFile == "" {
		return cfg, nil
	}
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", s.caFile)
		}
		cfg.RootCAs = pool
	}
	if s.certFile != "" {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = append(cfg.Certificates, cert)
	}
	return cfg, nil
}

// Close closes the idle connections of the client's own transport (one
// given with WithHTTPClient is left to its owner).
func (c *Client) Close() {
	if t, ok := c.http.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}

// Addrs are the base URLs the client sends to, in order.
func (c *Client) Addrs() []string { return append([]string(nil), c.bases...) }

// The services, one per domain of the API.

// Nodes is the node primitives: create-if-absent, compare-and-set.
func (c *Client) Nodes() *Nodes { return &Nodes{c} }

// Concepts is the concept reservation authority.
func (c *Client) Concepts() *Concepts { return &Concepts{c} }

// Capacity is capacity cells and leases.
func (c *Client) Capacity() *Capacity { return &Capacity{c} }

// WorkItems is work-item admission, claims and completion.
func (c *Client) WorkItems() *WorkItems { return &WorkItems{c} }

// Reservations is host resource reservation of claimed work items.
func (c *Client) Reservations() *Reservations { return &Reservations{c} }

// Allocation is spaces, tasks and conflict keys.
func (c *Client) Allocation() *Allocation { return &Allocation{c} }

// Projection is hook projection targets, channels and writer leases.
func (c *Client) Projection() *Projection { return &Projection{c} }

// Cluster is the cluster itself: status, members, readiness, whoami and
// the change feed.
func (c *Client) Cluster() *Cluster { return &Cluster{c} }

// NewKey returns a fresh idempotency key (128 random bits). A caller
// that may retry a write after an unknown outcome (retry.Unknown) sets
// the key itself, so that every attempt carries the same one.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "go-" + hex.EncodeToString(b[:])
}

// keyOr is key, or a fresh one when it is empty.
func keyOr(key string) string {
	if key == "" {
		return NewKey()
	}
	return key
}
