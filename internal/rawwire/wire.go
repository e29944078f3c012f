package rawwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// MimeMsgpack is the content type of a raw call's body and reply.
const MimeMsgpack = "application/msgpack"

// MaxReplyBytes bounds what is read back from a node.
const MaxReplyBytes = 8 << 20

// Reply is the answer to a raw call: a command's response, a query's
// result, or the error that stopped either.
type Reply struct {
	Response *fsm.Response `msgpack:"res,omitempty"`
	Result   []byte        `msgpack:"out,omitempty"`
	Err      *errs.Error   `msgpack:"err,omitempty"`
}

// NewPeerTransport keeps enough idle connections per host for many
// concurrent callers: net/http's default of 2 would make most calls under
// load dial and tear down a connection of their own.
func NewPeerTransport() *http.Transport {
	return &http.Transport{
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
}

// PostMsgpack posts body (msgpack) to url and decodes the Reply.
func PostMsgpack(ctx context.Context, c *http.Client, url string, body []byte, reply *Reply) error {
	return PostMsgpackWith(ctx, c, url, body, nil, reply)
}

// PostMsgpackWith is PostMsgpack with more request headers (nil: none).
func PostMsgpackWith(ctx context.Context, c *http.Client, url string, body []byte, header http.Header, reply *Reply) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "request: %v", err)
	}
	for k, v := range header { // order-free: fills the request's header map
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", MimeMsgpack)
	resp, err := c.Do(req)
	if err != nil {
		return TransportError(url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes))
	if err != nil {
		return errs.Unknown("%s: reading reply: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != MimeMsgpack {
		return ReplyError(url, resp.StatusCode, raw)
	}
	if err := arblog.Unmarshal(raw, reply); err != nil {
		return errs.Unknown("%s: undecodable reply: %v", url, err)
	}
	return nil
}

// Retryable reports whether err says the command was certainly not
// applied and another attempt (perhaps on another node or leader) is
// safe.
func Retryable(err error) bool {
	if err == nil {
		return false // and no allocation for errors.As's target
	}
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.CodeUnavailable && !e.OutcomeUnknown
}
