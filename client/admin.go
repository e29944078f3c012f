package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// The cluster's administration (the admin role): membership, leadership,
// state hashes, backups. Each is a thin call on a route of the API.

// BackupTimeout bounds a Snapshot or Restore whose context has no
// deadline, as the node bounds the transfer: a backup outgrows the
// per-call timeout.
const BackupTimeout = 15 * time.Minute

// Join adds a member as a non-voter (POST /v1/cluster/join); it starts
// with an empty data directory and --join. Replace replaces a member
// gone for good.
func (s *Cluster) Join(ctx context.Context, req JoinRequest) (*JoinResult, error) {
	return do[JoinResult](ctx, s.c, repeat(http.MethodPost, "/v1/cluster/join", req))
}

// Remove removes a member (POST /v1/cluster/remove): its metadata, then
// its vote; the removed node stops.
func (s *Cluster) Remove(ctx context.Context, id string) (*RemoveResult, error) {
	return do[RemoveResult](ctx, s.c, repeat(http.MethodPost, "/v1/cluster/remove", RemoveRequest{ID: id}))
}

// TransferLeader hands the leadership to the voter to names, or with an
// empty to to the voter raft picks (POST /v1/cluster/transfer-leader),
// and returns the leader after the transfer. A to that is no member is
// errs.NotFound; a non-voter, or a cluster without another voter,
// errs.Invalid.
func (s *Cluster) TransferLeader(ctx context.Context, to string) (*TransferResult, error) {
	return do[TransferResult](ctx, s.c, repeat(http.MethodPost, "/v1/cluster/transfer-leader", TransferRequest{To: to}))
}

// StateHash returns the answering node's state hashes (GET
// /v1/cluster/state-hash): as of index when it is not 0 (the node waits
// until it has applied it; errs.Conflict when that index was applied
// inside a batch or has passed), else as of its applied index.
func (s *Cluster) StateHash(ctx context.Context, index uint64) (*StateHash, error) {
	var q url.Values
	if index > 0 {
		q = params("index", strconv.FormatUint(index, 10))
	}
	return do[StateHash](ctx, s.c, get("/v1/cluster/state-hash", q))
}

// Snapshot writes a backup of the cluster's state, taken on the leader
// (found through the status of whichever node answers), to w (GET
// /v1/cluster/snapshot). What w receives is checked only by its trailer:
// keep it once it was inspected (`arbiter snapshot save` does). The
// transfer is bounded by ctx, or by BackupTimeout without a deadline.
func (s *Cluster) Snapshot(ctx context.Context, w io.Writer) error {
	base, err := s.leaderBase(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := backupContext(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/cluster/snapshot", nil)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "%v", err)
	}
	resp, err := s.c.stream(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "%s: reading the backup: %v", req.URL, err)
	}
	return nil
}

// Restore replaces the cluster's state with the backup read from body,
// on the leader (POST /v1/cluster/restore). bumpIndex moves the log
// index that many entries past the larger of the backup's and the
// cluster's (0: none), for a backup of another cluster that went on
// without it. A leader of a release without bump_index restores without
// the bump: Restore then fails, saying so, though the restore has
// happened (the result is returned with the error). The transfer is
// bounded by ctx, or by BackupTimeout without a deadline.
func (s *Cluster) Restore(ctx context.Context, body io.Reader, bumpIndex uint64) (*RestoreResult, error) {
	base, err := s.leaderBase(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := backupContext(ctx)
	defer cancel()
	u := base + "/v1/cluster/restore"
	if bumpIndex > 0 {
		u += "?bump_index=" + strconv.FormatUint(bumpIndex, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%v", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := s.c.stream(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return nil, errs.Unknown("%s: reading the answer: %v", u, err)
	}
	var res RestoreResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "%s: answer is not the JSON expected: %v", u, err)
	}
	if res.BumpIndex != bumpIndex {
		return &res, errs.Errorf(errs.CodeUnavailable, "the leader restored the backup at index %d without bump_index %d (its release does not know it): "+
			"fences the backup's cluster issued after the backup may be issued again; upgrade the leader and restore again with the bump", res.Index, bumpIndex)
	}
	return &res, nil
}

// leaderBase is the base URL of the leader's API, in the scheme of the
// client's addresses.
func (s *Cluster) leaderBase(ctx context.Context) (string, error) {
	st, err := s.Status(ctx)
	if err != nil {
		return "", err
	}
	if st.LeaderAPIAddr == "" {
		return "", errs.Errorf(errs.CodeUnavailable, "node %s knows no leader API address", st.NodeID)
	}
	scheme, _, _ := strings.Cut(s.c.bases[0], "://")
	return scheme + "://" + st.LeaderAPIAddr, nil
}

// backupContext bounds a backup's transfer by BackupTimeout when ctx has
// no deadline.
func backupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, BackupTimeout)
}

// stream sends req, whose body (a backup) may be sent only once, to the
// one node it names: a 2xx answer is returned for the caller to read
// and close; an error answer becomes its error. A request that got no
// answer leaves its outcome unknown unless it was never sent.
func (c *Client) stream(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(req.URL.String(), err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		return nil, decodeError(resp.StatusCode, raw)
	}
	return resp, nil
}
