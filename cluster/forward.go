package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/rawwire"
	arblog "github.com/arbiterhq/arbiter/log"
)

// Node-to-node calls speak msgpack (package internal/rawwire): the
// request body is an encoded log.Command (apply) or a wireQuery (query),
// the reply a wireReply. HTTP status is 200 whenever a reply was
// produced; failures travel inside it with their code.

const mimeMsgpack = rawwire.MimeMsgpack

// maxReplyBytes bounds what we read back from a peer.
const maxReplyBytes = rawwire.MaxReplyBytes

type wireQuery struct {
	Query     fsm.Query          `msgpack:"q"`
	Principal identity.Principal `msgpack:"p"`
}

// wireReply is the reply of every msgpack call, the node's own and a
// forwarded one.
type wireReply = rawwire.Reply

// The wire helpers, under the names the package's files use.
var (
	newPeerTransport = rawwire.NewPeerTransport
	doJSON           = rawwire.DoJSON
)

// forwardQuery asks the leader for a linearizable read. Reads change
// nothing, so every transport failure is safe to retry.
func (cp *commands) forwardQuery(ctx context.Context, api string, q fsm.Query, p identity.Principal) ([]byte, error) {
	body, err := arblog.Marshal(wireQuery{Query: q, Principal: p})
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode query: %v", err)
	}
	var reply wireReply
	if err := rawwire.PostMsgpackWith(ctx, cp.peers, cp.url(api, "/v1/internal/query"), body, credentialsHeaderOf([]string{p.Cred}), &reply); err != nil {
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
