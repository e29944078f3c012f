package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/loadgen"
)

// maxBenchReplyBytes bounds what createJSONOp reads of one answer: a
// create's reply carries the node, whose properties are bounded by the
// node's own limit, well under this.
const maxBenchReplyBytes = 1 << 20

// createJSONOp creates a new node per call over the public JSON API, as
// curl or any HTTP client would send it: POST /v1/nodes/create with a
// JSON body, client c on its own keep-alive connection to urls[c %
// len(urls)]. It measures what a client that is not Go sees (issue 11 was
// filed with such a client), where --op create measures the raw msgpack
// protocol (internal/rawremote). base carries the TLS settings (nil: plain HTTP).
func createJSONOp(prefix string, run, valueBytes, clients int, urls []string, base *http.Client, token string) loadgen.Op {
	var value string
	if valueBytes > 0 {
		value = strings.Repeat("v", valueBytes-2) // plus its two quotes
	}
	hcs := make([]*http.Client, clients)
	for c := range hcs {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if base != nil {
			t = base.Transport.(*http.Transport).Clone()
		}
		t.MaxIdleConnsPerHost = 1 // one connection per client, as the client count says
		hcs[c] = &http.Client{Transport: t}
	}
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var body bytes.Buffer // node_id: benchNodeID's, written in place
		fmt.Fprintf(&body, `{"node_id":"%s-r%d-c%d-%d","labels":["bench"],"properties":{"owner":%d`, prefix, run, c, seq, c)
		if valueBytes > 0 {
			body.WriteString(`,"value":"` + value + `"`)
		}
		body.WriteString(`}}`)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls[c%len(urls)]+"/v1/nodes/create", &body)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hcs[c].Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBenchReplyBytes))
		if err != nil {
			return err
		}
		var reply struct {
			Created bool        `json:"created"`
			Error   *errs.Error `json:"error"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			return fmt.Errorf("HTTP %d: %v", resp.StatusCode, err)
		}
		switch {
		case reply.Error != nil:
			return reply.Error
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		case !reply.Created:
			return fmt.Errorf("id was not new")
		}
		return nil
	}
}
