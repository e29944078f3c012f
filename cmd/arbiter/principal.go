package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/spf13/cobra"
)

func (a *app) principalCommand() *cobra.Command {
	newToken := &cobra.Command{
		Use:   "new-token",
		Short: "print a new random bearer token and the token_sha256 the principals file stores",
		Long: `new-token prints a new random bearer token and its token_sha256. Keep the
token secret (give it to the principal's client: --token, --token-file or
$ARBITER_TOKEN); put only the hash in the principals file.`,
		Args: cobra.NoArgs,
	}
	o := outputFlag(newToken.Flags(), "table")
	newToken.RunE = func(*cobra.Command, []string) error {
		token, err := makeToken()
		if err != nil {
			return err
		}
		out := map[string]string{"token": token, "token_sha256": identity.HashToken(token)}
		return o.print(a.stdout, out, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "token:        %s\ntoken_sha256: %s\n", out["token"], out["token_sha256"])
			return err
		})
	}
	hashToken := &cobra.Command{
		Use:   "hash-token",
		Short: "read a token on standard input and print its token_sha256",
		Args:  cobra.NoArgs,
	}
	ho := outputFlag(hashToken.Flags(), "table")
	hashToken.RunE = func(*cobra.Command, []string) error {
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		token := strings.TrimSpace(line)
		if token == "" {
			return usageErrorf("no token on standard input (%v)", err)
		}
		sum := identity.HashToken(token)
		return ho.print(a.stdout, map[string]string{"token_sha256": sum}, func(w io.Writer) error {
			_, err := fmt.Fprintln(w, sum)
			return err
		})
	}
	return group("principal", "manage the cluster's principals (add, remove, rotate, list); make tokens and their hashes",
		`principal manages the cluster's principals, which are replicated state: add,
remove and rotate take effect on every node as soon as it applies the change,
without SIGHUP (they need an admin of every tenant; list needs an admin).
add and rotate make a random token here, print it once and send only its
token_sha256: no node, log, snapshot or backup ever holds the token.

serve --principals names a node's bootstrap file: it seeds the cluster's
table when the cluster has none, or when its file_version is above the
table's; a change made here is never undone by a restart with the same
file. new-token and hash-token make what such a file holds. Certificates
for principals: arbiter cert client.

Exit status: 0 done, 1 the call failed (unreachable, forbidden, not found),
2 a wrong request, 3 not done (the id exists, the last admin would go).`,
		a.principalAddCommand(), a.principalRemoveCommand(), a.principalRotateCommand(), a.principalListCommand(), newToken, hashToken)
}

// makeToken is a random bearer token: 32 bytes from crypto/rand, base64url.
func makeToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// tokenOut is what add and rotate print: the change, and the token they
// made (once: the cluster keeps only its hash).
type tokenOut struct {
	Token       string                  `json:"token,omitempty"`
	TokenSHA256 string                  `json:"token_sha256,omitempty"`
	Change      *client.PrincipalChange `json:"change"`
}

// credential is the token_sha256 a command sends: --token-sha256's, or
// that of a token it makes (returned, to print once).
func credential(given []string, makeOne bool) (hashes []string, token string, err error) {
	for _, h := range given {
		if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
			return nil, "", usageErrorf("--token-sha256 %q: want 64 hex digits (arbiter principal hash-token)", h)
		}
	}
	if len(given) > 0 || !makeOne {
		return given, "", nil
	}
	token, err = makeToken()
	if err != nil {
		return nil, "", err
	}
	return []string{identity.HashToken(token)}, token, nil
}

// printToken prints a change and the token made for it; a call whose
// outcome is unknown prints the token on stderr, with the flag that
// retries with the same one.
func (a *app) printToken(o output, token string, res *client.PrincipalChange, err error) error {
	if err != nil {
		if token != "" && errs.IsOutcomeUnknown(err) {
			fmt.Fprintf(a.stderr, "the token sent (its hash may have been applied): %s\nretry with: --token-sha256 %s\n", token, identity.HashToken(token))
		}
		return err
	}
	out := tokenOut{Change: res}
	if token != "" {
		out.Token, out.TokenSHA256 = token, identity.HashToken(token)
	}
	return o.print(a.stdout, out, func(w io.Writer) error {
		if token != "" {
			fmt.Fprintf(w, "token:        %s\ntoken_sha256: %s\n(the token is shown once: the cluster keeps only its hash)\n", token, out.TokenSHA256)
		}
		return printChange(w, res)
	})
}

func printChange(w io.Writer, res *client.PrincipalChange) error {
	p := res.Principal
	verb := "set"
	switch {
	case res.Created:
		verb = "added"
	case res.Removed:
		verb = "removed"
	}
	_, err := fmt.Fprintf(w, "principal %s %s at index %d (tenants %s, roles %s, tokens %s); the table holds %d principals\n",
		p.ID, verb, res.Index, strings.Join(p.Tenants, ","), strings.Join(p.Roles, ","), strings.Join(p.Tokens, ","), res.Count)
	return err
}

func (a *app) principalAddCommand() *cobra.Command {
	cmd, o := a.apiCommand("add ID --tenant T --role R", "add a principal (makes its token, prints it once)",
		`add adds a principal to the cluster's table: in force on every node as soon
as it applies the change. Without --token-sha256 or --cert-sha256 it makes a
random token, prints it once and sends only its hash. --replace replaces a
principal of that id (its tenants, roles and credentials).`, cobra.ExactArgs(1))
	fs := cmd.Flags()
	tenants := fs.StringSlice("tenant", nil, `tenant the principal acts for ("*": every tenant); repeat or comma-separate`)
	roles := fs.StringSlice("role", nil, "role: admin, controller, member or reader; repeat or comma-separate")
	tokens := fs.StringSlice("token-sha256", nil, "token_sha256 of a token made elsewhere (arbiter principal hash-token), instead of a new one")
	certs := fs.StringSlice("cert-sha256", nil, "cert_sha256 of a client certificate (arbiter cert client)")
	replace := fs.Bool("replace", false, "replace a principal of that id")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		if len(*tenants) == 0 || len(*roles) == 0 {
			return usageErrorf("add needs --tenant and --role")
		}
		hashes, token, err := credential(*tokens, len(*certs) == 0)
		if err != nil {
			return err
		}
		c, err := a.apiClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		res, err := c.Principals().Add(ctx, client.PrincipalRequest{ID: args[0], Tenants: *tenants, Roles: *roles,
			TokenSHA256: hashes, CertSHA256: *certs, Replace: *replace})
		return a.printToken(o, token, res, err)
	}
	return cmd
}

func (a *app) principalRotateCommand() *cobra.Command {
	cmd, o := a.apiCommand("rotate ID", "replace a principal's tokens with a new one (printed once)",
		`rotate replaces the principal's token hashes: its old tokens are refused on
every node as soon as it applies the change. Without --token-sha256 it makes
a random token, prints it once and sends only its hash.`, cobra.ExactArgs(1))
	tokens := cmd.Flags().StringSlice("token-sha256", nil, "token_sha256 of a token made elsewhere, instead of a new one")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		hashes, token, err := credential(*tokens, true)
		if err != nil {
			return err
		}
		c, err := a.apiClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		res, err := c.Principals().Rotate(ctx, args[0], hashes...)
		return a.printToken(o, token, res, err)
	}
	return cmd
}

func (a *app) principalRemoveCommand() *cobra.Command {
	cmd, o := a.apiCommand("remove ID", "remove a principal (its credentials are refused on every node)",
		`remove removes a principal from the cluster's table: its credentials are
refused on every node as soon as it applies the change. The last admin of
every tenant cannot be removed.`, cobra.ExactArgs(1))
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Principals().Remove(ctx, args[0])
		})
	}
	return cmd
}

func (a *app) principalListCommand() *cobra.Command {
	cmd, o := a.apiCommand("list", "list the cluster's principals (credentials as fingerprints)",
		`list prints the cluster's principal table: ids, tenants, roles, and each
credential as a fingerprint (sha256: and 8 hex digits), never a hash.
configured false: the cluster holds no table yet, and each node
authenticates with its own --principals file.`, nil)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Principals().List(ctx, "")
		})
	}
	return cmd
}
