package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	arblog "github.com/arbiterhq/arbiter/log"
)

// Node-to-node and Remote calls speak msgpack: the request body is an
// encoded log.Command (apply) or a wireQuery (query), the reply a
// wireReply. HTTP status is 200 whenever a reply was produced; failures
// travel inside it with their code.

const mimeMsgpack = "application/msgpack"

// maxReplyBytes bounds what we read back from a peer.
const maxReplyBytes = 8 << 20

type wireQuery struct {
	Query     fsm.Query          `msgpack:"q"`
	Principal identity.Principal `msgpack:"p"`
}

type wireReply struct {
	Response *fsm.Response `msgpack:"res,omitempty"`
	Result   []byte        `msgpack:"out,omitempty"`
	Err      *errs.Error   `msgpack:"err,omitempty"`
}

// newPeerTransport keeps enough idle connections per host for many
// concurrent callers: net/http's default of 2 would make most calls under
// load dial and tear down a connection of their own.
func newPeerTransport() *http.Transport {
	return &http.Transport{
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
}

// forwardQuery asks the leader for a linearizable read. Reads change
// nothing, so every transport failure is safe to retry.
func (cp *commands) forwardQuery(ctx context.Context, api string, q fsm.Query, p identity.Principal) ([]byte, error) {
	body, err := arblog.Marshal(wireQuery{Query: q, Principal: p})
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode query: %v", err)
	}
	var reply wireReply
	if err := postMsgpack(ctx, cp.peers, cp.url(api, "/v1/internal/query"), body, &reply); err != nil {
		if e := errs.From(err); e.OutcomeUnknown {
			return nil, errs.Errorf(errs.CodeUnavailable, "%s", e.Message)
		}
		return nil, err
	}
	if reply.Err != nil {
		return nil, reply.Err
	}
	return reply.Result, nil
}

func postMsgpack(ctx context.Context, c *http.Client, url string, body []byte, reply *wireReply) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "request: %v", err)
	}
	req.Header.Set("Content-Type", mimeMsgpack)
	resp, err := c.Do(req)
	if err != nil {
		return transportError(url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return errs.Unknown("%s: reading reply: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mimeMsgpack {
		return replyError(url, resp.StatusCode, raw)
	}
	if err := arblog.Unmarshal(raw, reply); err != nil {
		return errs.Unknown("%s: undecodable reply: %v", url, err)
	}
	return nil
}

// postJSON posts body as JSON and decodes a 2xx reply into out (if not
// nil); an error reply becomes its *errs.Error.
func (c *core) postJSON(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "encode: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return doJSON(c.peers, req, out)
}

func doJSON(c *http.Client, req *http.Request, out any) error {
	url := req.URL.String()
	resp, err := c.Do(req)
	if err != nil {
		return transportError(url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return errs.Unknown("%s: reading reply: %v", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return replyError(url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := decodeExact(raw, out); err != nil {
			return errs.Errorf(errs.CodeInternal, "%s: undecodable reply: %v", url, err)
		}
	}
	return nil
}

// decodeExact decodes a JSON answer keeping every number exact: a number
// that lands in an interface (an error's detail, a generic result)
// becomes a json.Number with the server's literal, never a float64, which
// loses integers past 2^53 and prints 1e21 and above in exponent form.
func decodeExact(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(out)
}

// replyError turns a non-OK HTTP reply into an error: the JSON error body
// when there is one, else a code derived from the status.
func replyError(url string, status int, raw []byte) error {
	if status == http.StatusBadRequest && strings.HasPrefix(url, "http://") && bytes.Contains(raw, []byte(plainToTLS)) {
		// The TLS server refused the request before reading it.
		return errs.Errorf(errs.CodeUnavailable, "%s: the node speaks HTTPS (TLS), not plain HTTP: use an https:// address (and --ca for its CA)", url)
	}
	var body struct {
		Error *errs.Error `json:"error"`
	}
	if decodeExact(raw, &body) == nil && body.Error != nil && errs.Known(body.Error.Code) {
		return body.Error
	}
	code := errs.CodeInternal
	switch {
	case status == http.StatusServiceUnavailable:
		code = errs.CodeUnavailable
	case status == http.StatusTooManyRequests:
		code = errs.CodeBackpressure
	case status == http.StatusNotFound:
		code = errs.CodeNotFound
	}
	return errs.Errorf(code, "%s: HTTP %d: %s", url, status, bytes.TrimSpace(raw[:min(len(raw), 200)]))
}

// transportError classifies a failed HTTP call: a failed dial never
// reached the peer, so nothing was applied; any later failure leaves the
// outcome unknown.
func transportError(url string, err error) error {
	var op *net.OpError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		// The server answered the TLS handshake in plain HTTP: nothing
		// was sent, let alone applied.
		return errs.Errorf(errs.CodeUnavailable, "%s: the node speaks plain HTTP, not HTTPS: use an http:// address (or start the node with TLS)", url)
	case errors.As(err, &unknownCA):
		return errs.Errorf(errs.CodeUnavailable, "%s: the node's certificate is not signed by a CA this client trusts (give the nodes' CA: --ca, or Remote.WithHTTPClient): %v", url, err)
	case errors.As(err, &op) && op.Op == "dial":
		return errs.Errorf(errs.CodeUnavailable, "%s unreachable: %v", url, err)
	}
	return errs.Unknown("%s: %v", url, fmt.Sprint(err))
}

// plainToTLS is what net/http's TLS server writes, with status 400, to a
// client that sent plain HTTP: the one sign of that mistake on the wire.
const plainToTLS = "Client sent an HTTP request to an HTTPS server."
