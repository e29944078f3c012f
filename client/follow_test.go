package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// Follow (under arbiter node watch) resumes at its cursor after a node
// answers unavailable, yields each event once, and ends on an expired
// cursor saying where to resume after a resync.
func TestFollowResumesAndEndsOnExpiry(t *testing.T) {
	var calls atomic.Int32
	var afters []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		afters = append(afters, r.URL.Query().Get("after")) // one request at a time
		w.Header().Set("Content-Type", "application/json")
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"events":[{"seq":4,"index":10,"time_ms":1,"kind":"node.created","key":"a"}],"next":4,"last_seq":4}`))
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"no leader"}}`))
		case 3:
			_, _ = w.Write([]byte(`{"events":[{"seq":5,"index":11,"time_ms":2,"kind":"node.created","key":"b"}],"next":5,"last_seq":5}`))
		default:
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"error":{"code":"cursor_expired","message":"pruned","detail":{"first_seq":7,"last_seq":9}}}`))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New([]string{srv.URL}, client.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	for ev, ferr := range c.Cluster().Follow(ctx, client.ChangesQuery{After: 3, Wait: 10 * time.Millisecond}) {
		if ferr != nil {
			err = ferr
			break
		}
		keys = append(keys, ev.Key)
	}
	if strings.Join(keys, ",") != "a,b" {
		t.Fatalf("events %v, want a,b once each", keys)
	}
	if strings.Join(afters, ",") != "3,4,4,5" {
		t.Fatalf("cursors asked %v, want 3,4,4,5 (resumed after a once the node was back)", afters)
	}
	var expired *client.CursorExpiredError
	if !errors.Is(err, errs.CursorExpired) || !errors.As(err, &expired) || expired.After != 5 || expired.FirstSeq != 7 || expired.LastSeq != 9 ||
		!strings.Contains(err.Error(), "cursor 5 expired (the feed holds 7..9; resync, then watch after 9)") {
		t.Fatalf("end: %v", err)
	}
}
