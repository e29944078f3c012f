package projection

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/arbiterhq/arbiter/errs"
)

// tokenBytes is the size of a holder's raw token.
const tokenBytes = 32

// newToken makes a holder's token on the serving node, before it
// proposes: 32 random bytes, hex-encoded for the holder, and the SHA-256
// of the raw bytes, which alone enters the log.
func newToken(random io.Reader) (token, hash string, err error) {
	raw := make([]byte, tokenBytes)
	if _, err := io.ReadFull(random, raw); err != nil {
		return "", "", errs.Errorf(errs.CodeInternal, "make lease token: %v", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(raw), hex.EncodeToString(sum[:]), nil
}

// tokenHash is the hash of a token a holder presents.
func tokenHash(token string) (string, error) {
	if !tokenPattern.MatchString(token) {
		return "", errs.New(errs.CodeInvalid, fmt.Sprintf("token must be the %d lowercase hex digits acquire returned", 2*tokenBytes))
	}
	raw, _ := hex.DecodeString(token)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

var defaultRandom io.Reader = rand.Reader
