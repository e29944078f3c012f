package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/arbiterhq/arbiter/identity"
)

const principalUsage = `usage: arbiter principal <new-token|hash-token>

  new-token    print a new random bearer token and the token_sha256 to put in
               the principals file (keep the token secret; store only the hash)
  hash-token   read a token on standard input and print its token_sha256
`

func principal(args []string) error {
	if len(args) != 1 {
		fmt.Fprint(os.Stderr, principalUsage)
		return errors.New("expected one command")
	}
	switch args[0] {
	case "new-token":
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token := base64.RawURLEncoding.EncodeToString(b)
		fmt.Printf("token:        %s\ntoken_sha256: %s\n", token, identity.HashToken(token))
		return nil
	case "hash-token":
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		token := strings.TrimSpace(line)
		if token == "" {
			return fmt.Errorf("no token on standard input (%v)", err)
		}
		fmt.Println(identity.HashToken(token))
		return nil
	}
	fmt.Fprint(os.Stderr, principalUsage)
	return fmt.Errorf("unknown principal command %q", args[0])
}
