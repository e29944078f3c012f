package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/spf13/pflag"
)

// defaultAddr is the API of `arbiter serve` with no flags.
const defaultAddr = "http://127.0.0.1:8000"

// app is one run of the binary: its streams, its environment and the
// values of the flags every client command shares. Tests run many apps
// in one process, so nothing here is global.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// isTerminal reports whether stderr is a terminal (progress is
	// written there only then).
	isTerminal func() bool

	addr, token, tokenFile, ca, cert, key string
	timeout                               time.Duration
	// args is the command line run was given, for the exact command an
	// unknown outcome's advice repeats (idemKey.advise).
	args []string
}

// connFlags registers the flags that reach a cluster. Each falls back to
// its environment variable when not given, so that a shell configured
// once (like ETCDCTL_ENDPOINTS or CONSUL_HTTP_ADDR) needs no flags.
func (a *app) connFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.addr, "addr", "", "comma-separated API URLs of the cluster's nodes, tried in turn while one cannot be reached (default $ARBITER_ADDR, else "+defaultAddr+")")
	fs.StringVar(&a.token, "token", "", "bearer token of a principal (default $ARBITER_TOKEN)")
	fs.StringVar(&a.tokenFile, "token-file", "", "file holding the bearer token (default $ARBITER_TOKEN_FILE)")
	fs.StringVar(&a.ca, "ca", "", "PEM file of the CA that signed the nodes' certificates, for https URLs (default $ARBITER_CACERT)")
	fs.StringVar(&a.cert, "cert", "", "client certificate (PEM) naming a principal, for https URLs (default $ARBITER_CERT)")
	fs.StringVar(&a.key, "key", "", "private key (PEM) of --cert (default $ARBITER_KEY)")
	fs.DurationVar(&a.timeout, "timeout", 30*time.Second, "how long one call may take")
}

// setting is a flag's value, else its environment variable's, else def.
func (a *app) setting(flag, env, def string) string {
	if flag != "" {
		return flag
	}
	if v := a.getenv(env); v != "" {
		return v
	}
	return def
}

// addrs are the cluster's API URLs.
func (a *app) addrs() []string {
	var out []string
	for _, s := range strings.Split(a.setting(a.addr, "ARBITER_ADDR", defaultAddr), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// bearer is the token the flags or the environment give, if any.
func (a *app) bearer() (string, error) {
	if t := a.setting(a.token, "ARBITER_TOKEN", ""); t != "" {
		return t, nil
	}
	file := a.setting(a.tokenFile, "ARBITER_TOKEN_FILE", "")
	if file == "" {
		return "", nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	t := strings.TrimSpace(string(raw))
	if t == "" {
		return "", fmt.Errorf("--token-file: %s is empty", file)
	}
	return t, nil
}

// httpClient is the client for the TLS settings given, or nil for
// package client's own.
func (a *app) httpClient() (*http.Client, error) {
	ca := a.setting(a.ca, "ARBITER_CACERT", "")
	cert := a.setting(a.cert, "ARBITER_CERT", "")
	key := a.setting(a.key, "ARBITER_KEY", "")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca: no certificate in %s", ca)
		}
		cfg.RootCAs = pool
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("--cert and --key go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t}, nil
}

// coreClient is the client of the core commands (status, member, node,
// watch, snapshot, ...): the cluster at the flags' addresses, each asked
// once per call, in turn while one cannot be reached, so that a cluster
// that cannot be reached is reported at once.
func (a *app) coreClient() (*client.Client, error) {
	addrs := a.addrs()
	return a.apiClientAt(addrs, client.WithMaxAttempts(min(max(len(addrs), 1), client.MaxAttempts)))
}

// nodeAPI is a client of the node at base alone, asked once per call: a
// probe of one member reports that member.
func (a *app) nodeAPI(base string) (*client.Client, error) {
	return a.apiClientAt([]string{base}, client.WithMaxAttempts(1))
}

// statusOf is the status of the node c reaches, as the server's type:
// the core commands print with the server's types (their String forms
// and field order, which their output has always had), and the client's
// types carry the same JSON fields (client's drift test), so the round
// trip through JSON loses nothing.
func statusOf(ctx context.Context, c *client.Client) (*cluster.Status, error) {
	st, err := c.Cluster().Status(ctx)
	if err != nil {
		return nil, err
	}
	return asServer[cluster.Status](st)
}

// asServer is v, a client type, read as the server's type T it mirrors.
func asServer[T any](v any) (*T, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the answer does not read as %T: %w", out, err)
	}
	return &out, nil
}

// scheme is the URL scheme of the configured addresses, for member API
// addresses (host:port) learned from the cluster.
func (a *app) scheme() string {
	if s, _, ok := strings.Cut(a.addrs()[0], "://"); ok {
		return s
	}
	return "http"
}

// context bounds one command by --timeout.
func (a *app) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.timeout)
}
