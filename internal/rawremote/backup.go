package rawremote

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawwire"
)

// backupTransferTimeout bounds sending or receiving a backup, as the
// node's own bound (cluster's backupTransferTimeout) does.
const backupTransferTimeout = 15 * time.Minute

// Snapshot writes a backup of the cluster's state to w. Backups are taken
// on the leader, which Snapshot finds through the status of whichever node
// answers. What w receives is checked only by its trailer: keep it only
// once fsm.FSM.InspectSnapshot accepts it (`arbiter snapshot save` does).
func (r *Remote) Snapshot(ctx context.Context, w io.Writer) error {
	base, err := r.leaderBase(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := r.bound(ctx, backupTransferTimeout) // backups outgrow ordinary calls
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/cluster/snapshot", nil)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "%v", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return rawwire.TransportError(req.URL.String(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, rawwire.MaxReplyBytes))
		return rawwire.ReplyError(req.URL.String(), resp.StatusCode, raw)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "%s: reading the backup: %v", req.URL, err)
	}
	return nil
}

// Restore replaces the cluster's state with the backup read from body
// (see cluster.Node.Restore), on the leader.
func (r *Remote) Restore(ctx context.Context, body io.Reader) (*cluster.RestoreResult, error) {
	return r.RestoreWith(ctx, body, fsm.RestoreOptions{})
}

// RestoreWith is Restore with options (cluster.Node.RestoreWith). A leader of a
// release without bump_index restores without the bump: RestoreWith then
// fails, saying so, though the restore has happened.
func (r *Remote) RestoreWith(ctx context.Context, body io.Reader, opts fsm.RestoreOptions) (*cluster.RestoreResult, error) {
	if err := opts.CheckBump(); err != nil {
		return nil, err
	}
	base, err := r.leaderBase(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.bound(ctx, backupTransferTimeout) // backups outgrow ordinary calls
	defer cancel()
	url := base + "/v1/cluster/restore"
	if opts.BumpIndex > 0 {
		url += "?bump_index=" + strconv.FormatUint(opts.BumpIndex, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%v", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	var res cluster.RestoreResult
	if err := rawwire.DoJSON(r.client, req, &res); err != nil {
		return nil, err
	}
	if res.BumpIndex != opts.BumpIndex {
		return &res, errs.Errorf(errs.CodeUnavailable, "the leader restored the backup at index %d without bump_index %d (its release does not know it): "+
			"fences the backup's cluster issued after the backup may be issued again; upgrade the leader and restore again with the bump", res.Index, opts.BumpIndex)
	}
	return &res, nil
}

// leaderBase is the base URL of the leader's API, in the scheme of the
// configured addresses.
func (r *Remote) leaderBase(ctx context.Context) (string, error) {
	st, err := r.Status(ctx)
	if err != nil {
		return "", err
	}
	if st.LeaderAPIAddr == "" {
		return "", errs.Errorf(errs.CodeUnavailable, "node %s knows no leader API address", st.NodeID)
	}
	scheme, _, _ := strings.Cut(r.bases[0], "://")
	return scheme + "://" + st.LeaderAPIAddr, nil
}
