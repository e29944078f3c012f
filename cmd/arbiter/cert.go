package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/identity"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Files of the development CAs under --dir. Nodes and clients get
// certificates from different CAs on purpose: a node takes any
// certificate from the peer CA as another node (trusted with everything),
// so a client must never hold one.
const (
	peerCAFile, peerCAKeyFile     = "peer-ca.pem", "peer-ca-key.pem"
	clientCAFile, clientCAKeyFile = "client-ca.pem", "client-ca-key.pem"
)

func (a *app) certCommand() *cobra.Command {
	return group("cert", "make a development CA and node and client certificates",
		`cert makes certificates for a test or development cluster, as consul tls cert
create does, with crypto/x509 (ECDSA P-256), every file PEM and mode 0600:

  arbiter cert ca                      certs/peer-ca.pem (signs nodes) and certs/client-ca.pem (signs clients)
  arbiter cert node --id n1            certs/n1.pem, certs/n1-key.pem, for serve --tls-cert/--tls-key
  arbiter cert client --principal ops  certs/ops.pem, certs/ops-key.pem, and the cert_sha256 for the principals file

Start nodes with --tls-cert certs/n1.pem --tls-key certs/n1-key.pem
--tls-peer-ca certs/peer-ca.pem --tls-client-ca certs/client-ca.pem, and call
them with --ca certs/peer-ca.pem --cert certs/ops.pem --key certs/ops-key.pem
(or $ARBITER_CACERT, $ARBITER_CERT, $ARBITER_KEY). Keep the two CAs apart: a
certificate from the peer CA makes its holder a node. For production, use
your own PKI.`,
		a.certCACommand(), a.certNodeCommand(), a.certClientCommand())
}

// certResult is what a cert command wrote.
type certResult struct {
	Files []string `json:"files"`
	// Subject is the certificate's common name (the node id or the
	// principal).
	Subject string `json:"subject,omitempty"`
	// CertSHA256 is what the principals file lists for a client
	// certificate.
	CertSHA256 string `json:"cert_sha256,omitempty"`
	// Principal is a principals file entry for it, to complete with
	// tenants and roles.
	Principal *identity.PrincipalConfig `json:"principal,omitempty"`
}

// certFlags are what every cert command takes.
type certFlags struct {
	dir   *string
	days  *int
	force *bool
	out   output
}

func addCertFlags(fs *pflag.FlagSet) certFlags {
	return certFlags{
		dir:   fs.String("dir", "certs", "directory of the CA files and of what is made"),
		days:  fs.Int("days", 365, "days the certificate is valid"),
		force: fs.Bool("force", false, "overwrite files that exist"),
		out:   outputFlag(fs, "table"),
	}
}

func (a *app) certCACommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "make the development CAs: one that signs nodes, one that signs clients",
		Args:  cobra.NoArgs,
	}
	f := addCertFlags(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := f.out.check(); err != nil {
			return err
		}
		if err := os.MkdirAll(*f.dir, 0o700); err != nil {
			return err
		}
		res := certResult{}
		for _, ca := range []struct{ name, cert, key string }{
			{"arbiter development peer CA", peerCAFile, peerCAKeyFile},
			{"arbiter development client CA", clientCAFile, clientCAKeyFile},
		} {
			tmpl := certTemplate(ca.name, *f.days)
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
			tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
			files, _, err := writeCert(*f.dir, ca.cert, ca.key, tmpl, nil, nil, *f.force)
			if err != nil {
				return err
			}
			res.Files = append(res.Files, files...)
		}
		return f.out.print(a.stdout, res, func(w io.Writer) error { return certTable(w, res) })
	}
	return cmd
}

func (a *app) certNodeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node --id ID",
		Short: "make a node's certificate, signed by the peer CA (server and client use)",
		Long: `node makes ID.pem and ID-key.pem, signed by the peer CA of cert ca, valid as
a server (for --host, which clients check) and as a client (nodes call each
other with it; nodes check only the CA, not the names).`,
		Args: cobra.NoArgs,
	}
	f := addCertFlags(cmd.Flags())
	id := cmd.Flags().String("id", "", "the node's id (serve --id), its certificate's name and file name")
	hosts := cmd.Flags().StringSlice("host", []string{"127.0.0.1", "localhost"}, "IP addresses and DNS names clients reach the node by")
	_ = cmd.MarkFlagRequired("id")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := f.out.check(); err != nil {
			return err
		}
		if err := fileName(*id); err != nil {
			return usageErrorf("--id: %v", err)
		}
		tmpl := certTemplate(*id, *f.days)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		for _, h := range *hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		res, err := issue(*f.dir, peerCAFile, peerCAKeyFile, *id, tmpl, *f.force)
		if err != nil {
			return err
		}
		return f.out.print(a.stdout, res, func(w io.Writer) error { return certTable(w, *res) })
	}
	return cmd
}

func (a *app) certClientCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client --principal NAME",
		Short: "make a client certificate for a principal, signed by the client CA",
		Long: `client makes NAME.pem and NAME-key.pem, signed by the client CA of cert ca,
and prints its cert_sha256: a node maps a client certificate to the principal
whose cert_sha256 lists it (the name in the certificate is for people), so add
the printed entry, with its tenants and roles, to the principals file and
send the nodes SIGHUP.`,
		Args: cobra.NoArgs,
	}
	f := addCertFlags(cmd.Flags())
	principal := cmd.Flags().String("principal", "", "the principal's id (its name in the principals file)")
	_ = cmd.MarkFlagRequired("principal")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := f.out.check(); err != nil {
			return err
		}
		if err := fileName(*principal); err != nil {
			return usageErrorf("--principal: %v", err)
		}
		tmpl := certTemplate(*principal, *f.days)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		res, err := issue(*f.dir, clientCAFile, clientCAKeyFile, *principal, tmpl, *f.force)
		if err != nil {
			return err
		}
		res.Principal = &identity.PrincipalConfig{ID: *principal, Tenants: []string{}, Roles: []string{}, CertSHA256: []string{res.CertSHA256}}
		return f.out.print(a.stdout, res, func(w io.Writer) error { return certTable(w, *res) })
	}
	return cmd
}

// issue signs tmpl with the CA in dir and writes NAME.pem, NAME-key.pem.
func issue(dir, caCert, caKey, name string, tmpl *x509.Certificate, force bool) (*certResult, error) {
	parent, parentKey, err := readCA(filepath.Join(dir, caCert), filepath.Join(dir, caKey))
	if err != nil {
		return nil, fmt.Errorf("%w (make the CAs first: arbiter cert ca --dir %s)", err, dir)
	}
	files, der, err := writeCert(dir, name+".pem", name+"-key.pem", tmpl, parent, parentKey, force)
	if err != nil {
		return nil, err
	}
	return &certResult{Files: files, Subject: name, CertSHA256: identity.HashCert(der)}, nil
}

func certTemplate(name string, days int) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"arbiter development"}},
		NotBefore:    now.Add(-time.Hour), // clocks of a test cluster's hosts may disagree a little
		NotAfter:     now.Add(time.Duration(days) * 24 * time.Hour),
	}
}

// writeCert makes a key, signs tmpl for it with parent's key (itself when
// parent is nil) and writes both as PEM, mode 0600, refusing to replace
// a file unless force. It returns the files and the certificate's DER.
func writeCert(dir, certName, keyName string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, force bool) ([]string, []byte, error) {
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	if !force {
		for _, p := range []string{certPath, keyPath} {
			if _, err := os.Stat(p); err == nil {
				return nil, nil, fmt.Errorf("%s exists (--force replaces it)", p)
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return nil, nil, err
	}
	return []string{certPath, keyPath}, der, nil
}

func writePEM(path, kind string, der []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // an existing file keeps its mode otherwise
		f.Close()
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: kind, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readCA reads a CA certificate and its key written by cert ca.
func readCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certDER, err := readPEM(certPath, "CERTIFICATE")
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	keyDER, err := readPEM(keyPath, "PRIVATE KEY")
	if err != nil {
		return nil, nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("%s: not an ECDSA key", keyPath)
	}
	return cert, key, nil
}

func readPEM(path, kind string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no %s", path)
		}
		return nil, err
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != kind {
		return nil, fmt.Errorf("%s holds no PEM %s", path, kind)
	}
	return b.Bytes, nil
}

// fileName refuses names that do not make a plain file name.
func fileName(s string) error {
	if s == "" || s == "." || s == ".." || len(s) > 128 || strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '@')
	}) {
		return fmt.Errorf("%q: use letters, digits, '-', '_', '.' or '@' (it names the files)", s)
	}
	return nil
}

func certTable(w io.Writer, r certResult) error {
	for _, f := range r.Files {
		fmt.Fprintf(w, "wrote %s\n", f)
	}
	if r.CertSHA256 != "" {
		fmt.Fprintf(w, "cert_sha256: %s\n", r.CertSHA256)
		fmt.Fprintf(w, "principals file entry (add tenants and roles): {\"id\": %q, \"tenants\": [], \"roles\": [], \"cert_sha256\": [%q]}\n", r.Subject, r.CertSHA256)
	}
	return nil
}
