package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
)

// clientFlags are what every client command takes to reach a cluster
// that authenticates callers.
type clientFlags struct {
	token *string
	ca    *string
}

func addClientFlags(fs *flag.FlagSet) clientFlags {
	return clientFlags{
		token: fs.String("token", os.Getenv("ARBITER_TOKEN"), "bearer token of a principal (default $ARBITER_TOKEN)"),
		ca:    fs.String("ca", "", "PEM file of the CA that signed the nodes' certificates (for https URLs)"),
	}
}

// httpClient is an HTTP client trusting --ca, or nil for the default.
func (f clientFlags) httpClient() (*http.Client, error) {
	if *f.ca == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(*f.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", *f.ca)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

// remote is a client of the cluster at the comma-separated addrs, with
// the token and CA of the flags.
func (f clientFlags) remote(addrs string) (*cluster.Remote, error) {
	remote := cluster.NewRemote(strings.Split(addrs, ",")...)
	if hc, err := f.httpClient(); err != nil {
		return nil, err
	} else if hc != nil {
		remote.WithHTTPClient(hc)
	}
	if *f.token != "" {
		remote.WithToken(*f.token)
	}
	return remote, nil
}

// printJSON prints v as indented JSON on standard output.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// connectFlags is domain.CLIEnv.Connect: it registers --addr and the
// client flags on fs and returns what connects once fs is parsed.
func connectFlags(fs *flag.FlagSet) func() (domain.Conn, error) {
	addr := fs.String("addr", "http://127.0.0.1:8000", "comma-separated API URLs of the cluster's nodes")
	cf := addClientFlags(fs)
	return func() (domain.Conn, error) {
		remote, err := cf.remote(*addr)
		if err != nil {
			return nil, err
		}
		return remote, nil
	}
}
