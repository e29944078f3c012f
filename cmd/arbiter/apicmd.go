package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The domain commands built in this package (concept, space, task) share
// one shape: long typed flags for every field of the request, the
// connection flags, -o json|table (json by default, the API's answer),
// a call through package client, and the exit rule of exit.go. Writes
// that carry an idempotency key take --idempotency-key; without one the
// command makes a key, and when the outcome is unknown prints it on
// stderr (retry with: --idempotency-key K) so that a retry cannot apply
// the write twice.

// maxBodyBytes bounds a request body read with --filename (the server's own
// bound of a body is 1 MiB; a little more lets the server say so).
const maxBodyBytes = 2 << 20

// bodyAnnotation marks a flag that sets a field of the request body:
// --filename, which gives the whole body, is refused with any of them.
const bodyAnnotation = "arbiter-body-field"

// apiCommand is a leaf command with the connection flags and -o (json by
// default).
func (a *app) apiCommand(use, short, long string, args cobra.PositionalArgs) (*cobra.Command, output) {
	if args == nil {
		args = cobra.NoArgs
	}
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: args}
	a.connFlags(cmd.Flags())
	o := outputFlagInto(cmd.Flags(), output{format: new(string)}, "json")
	return cmd, o
}

// apiClient is a client of the cluster at the flags' addresses, with
// their credentials and --timeout.
func (a *app) apiClient() (*client.Client, error) { return a.apiClientAt(a.addrs()) }

// apiClientAt is a client of the nodes at addrs with the flags'
// credentials and --timeout, and the extra options.
func (a *app) apiClientAt(addrs []string, extra ...client.Option) (*client.Client, error) {
	if len(addrs) == 0 {
		return nil, usageErrorf("--addr names no address")
	}
	if a.timeout <= 0 {
		return nil, usageErrorf("--timeout %v: want a positive duration", a.timeout)
	}
	opts := append([]client.Option{client.WithTimeout(a.timeout)}, extra...)
	token, err := a.bearer()
	if err != nil {
		return nil, err
	}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	hc, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	if hc != nil {
		opts = append(opts, client.WithHTTPClient(hc))
	}
	c, err := client.New(addrs, opts...)
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// call checks -o, makes one call through the client and prints its
// answer as -o asks. Allocation's flat 409 body is printed too (it names
// the winner), before the error makes the command exit 3.
func (a *app) call(o output, fn func(ctx context.Context, c *client.Client) (any, error)) error {
	if err := o.check(); err != nil {
		return err
	}
	c, err := a.apiClient()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := a.context()
	defer cancel()
	res, err := fn(ctx, c)
	if err != nil {
		var conflict *client.AllocationConflictError
		if errors.As(err, &conflict) {
			if perr := o.print(a.stdout, conflict.AllocationConflict, nil); perr != nil {
				return perr
			}
		}
		return err
	}
	return o.print(a.stdout, res, nil)
}

// idemKey is a command's --idempotency-key (or the flag that plays its
// part, such as concept reserve's --request).
type idemKey struct {
	name      string
	value     *string
	generated bool
}

// keyFlag registers the key flag name on fs.
func keyFlag(fs *pflag.FlagSet, name, usage string) *idemKey {
	return &idemKey{name: name, value: fs.String(name, "", usage)}
}

// get is the key given, else a fresh one (client.NewKey), the same for
// every later get.
func (k *idemKey) get() string {
	if *k.value == "" {
		*k.value = client.NewKey()
		k.generated = true
	}
	return *k.value
}

// advise prints the key the command made when err is an unknown outcome
// (the one way to learn it, or to retry without applying the write
// twice), and the exact command that retries with it.
func (k *idemKey) advise(a *app, err error) error {
	if k.generated && errs.IsOutcomeUnknown(err) {
		fmt.Fprintf(a.stderr, "retry with: --%s %s\n", k.name, *k.value)
		words := []string{"arbiter"}
		for _, w := range append(slices.Clone(a.args), "--"+k.name, *k.value) {
			words = append(words, shellQuote(w))
		}
		fmt.Fprintf(a.stderr, "  %s\n", strings.Join(words, " "))
	}
	return err
}

// shellQuote is w as a POSIX shell reads it back: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// markBody marks flags that set fields of the request body.
func markBody(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if fs.Lookup(n) == nil {
			panic("markBody: no flag " + n) // a bug in the command's definition
		}
		_ = fs.SetAnnotation(n, bodyAnnotation, []string{"true"})
	}
}

// jsonFlag registers --filename FILE|- (-f FILE, kubectl's name for it)
// on fs, and --json, its name in earlier releases, as a
// deprecated alias: --json is -o json on every other command, and one
// flag has one meaning.
func jsonFlag(fs *pflag.FlagSet) *string {
	v := fs.StringP("filename", "f", "", "the whole request body as JSON: a file, - for standard input, or the JSON itself; refused with the flags that set its fields")
	fs.StringVar(v, "json", "", "the same as --filename")
	deprecate(fs, "json", "use --filename (or -f)")
	return v
}

// readBody decodes the --filename source src into v, strictly (an unknown
// field is an error), refusing it with any body-field flag of fs.
func (a *app) readBody(fs *pflag.FlagSet, src string, v any) error {
	var given []string
	fs.Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[bodyAnnotation]; ok {
			given = append(given, "--"+f.Name)
		}
	})
	if len(given) > 0 {
		slices.Sort(given)
		return usageErrorf("--filename gives the whole request: leave out %s", strings.Join(given, ", "))
	}
	raw, err := a.readSource("filename", src)
	if err != nil {
		return err
	}
	return decodeStrict("filename", raw, v)
}

// decodeStrict decodes the JSON --name gave into v: an unknown field, or
// more than one value, is a usage error.
func decodeStrict(name string, raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return usageErrorf("--%s: not the JSON wanted: %v", name, err)
	}
	if dec.More() {
		return usageErrorf("--%s: more than one JSON value", name)
	}
	return nil
}

// readSource reads the JSON a flag (--name) gives: a file, - for
// standard input, or the JSON itself, at most maxBodyBytes.
func (a *app) readSource(name, src string) ([]byte, error) {
	var raw []byte
	var err error
	switch t := strings.TrimSpace(src); {
	case t == "-":
		raw, err = io.ReadAll(io.LimitReader(a.stdin, maxBodyBytes+1))
	case strings.HasPrefix(t, "{") || strings.HasPrefix(t, "["):
		raw = []byte(t)
	default:
		var f *os.File
		if f, err = os.Open(src); err == nil {
			raw, err = io.ReadAll(io.LimitReader(f, maxBodyBytes+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, usageErrorf("--%s: %v", name, err)
	}
	if len(raw) > maxBodyBytes {
		return nil, usageErrorf("--%s: more than %d bytes", name, maxBodyBytes)
	}
	return raw, nil
}

// sha256Digest is "sha256:" and the hex SHA-256 of b, the digest form
// the API stores and compares (the Python client's digest()).
func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// digestFlag is a sha256: digest the API takes, given three ways: as it
// is (--NAME), as text (--NAME-text) or as a file (--NAME-file), whose
// digest the command computes as the Python client's digest() and
// file_digest() do.
type digestFlag struct {
	name, field        string
	digest, text, file *string
}

// addDigestFlag registers --name, --name-text and --name-file for the
// request field field; what names what the digest is of.
func addDigestFlag(fs *pflag.FlagSet, name, field, what string) *digestFlag {
	return &digestFlag{name: name, field: field,
		digest: fs.String(name, "", field+" as it is (sha256: and 64 hex digits)"),
		text:   fs.String(name+"-text", "", what+" in words: "+field+" is sha256: and its hex SHA-256"),
		file:   fs.String(name+"-file", "", "a file holding "+what+": "+field+" is sha256: and the hex SHA-256 of its bytes"),
	}
}

// value is the digest of the one of the three flags given; none or more
// than one is a usage error.
func (d *digestFlag) value() (string, error) {
	n := 0
	for _, s := range []string{*d.digest, *d.text, *d.file} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return "", usageErrorf("give one of --%s, --%s-text and --%s-file (%s)", d.name, d.name, d.name, d.field)
	}
	switch {
	case *d.text != "":
		return sha256Digest([]byte(*d.text)), nil
	case *d.file != "":
		b, err := os.ReadFile(*d.file)
		if err != nil {
			return "", usageErrorf("--%s-file: %v", d.name, err)
		}
		return sha256Digest(b), nil
	}
	return *d.digest, nil
}

// optionalUint is the flag's value when it was given, else nil.
func optionalUint(fs *pflag.FlagSet, name string, v uint64) *uint64 {
	if !fs.Changed(name) {
		return nil
	}
	return &v
}

// optionalString is the flag's value when it was given, else nil.
func optionalString(fs *pflag.FlagSet, name, v string) *string {
	if !fs.Changed(name) {
		return nil
	}
	return &v
}

// pageFlags registers --after and --limit (and --stale for reads that
// take a consistency).
type pageFlags struct {
	after *string
	limit *int
	stale *bool
}

func addPageFlags(fs *pflag.FlagSet, stale bool) pageFlags {
	p := pageFlags{after: fs.String("after", "", "the next_cursor of the page before"),
		limit: fs.Int("limit", 0, "page size, 1..128 (default 128)")}
	if stale {
		p.stale = staleFlag(fs)
	}
	return p
}

func (p pageFlags) query() client.PageQuery {
	q := client.PageQuery{After: *p.after, Limit: *p.limit}
	if p.stale != nil && *p.stale {
		q.Consistency = client.Stale
	}
	return q
}

// consistencyOf is the client's consistency for --stale.
func consistencyOf(stale *bool) client.Consistency {
	if stale != nil && *stale {
		return client.Stale
	}
	return client.Linearizable
}
