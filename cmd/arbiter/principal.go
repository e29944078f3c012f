package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

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
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token := base64.RawURLEncoding.EncodeToString(b)
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
	return group("principal", "make bearer tokens and the hashes a principals file stores",
		`principal makes what serve --principals needs: tokens and their hashes.
Certificates for principals: arbiter cert client.`, newToken, hashToken)
}
