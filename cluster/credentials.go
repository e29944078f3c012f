package cluster

import (
	"context"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// The credential that authenticated a principal (identity.Principal.Cred)
// never enters the log: a replica of an older binary could not decode a
// command that held it, and would refuse what its peers apply. A node
// that forwards sends it beside what it forwards, in credentialsHeader:
// the credentials of a batch's commands in order ("-" for a command
// without one), or the one of a linearizable read. The leader holds a
// forwarded command's against the registry it authenticates with, when
// that is the cluster's table (checkForwardedCredential), before it
// proposes the command; fsm.Query holds a forwarded read's against the
// state it reads (the access module's AuthorizeRead). The leader's own
// requests were authenticated with that same registry. A leader of an
// older binary ignores the header, and checks tenants and roles only (in
// Apply).
const credentialsHeader = "Arbiter-Credentials"

// checkForwardedCredential refuses (forbidden) a forwarded command whose
// principal names a credential the principal no longer holds in the
// cluster's table, as this leader has applied it: a token rotated away or
// a certificate taken off since the forwarding node, lagging, took it.
// A leader that lags itself (just elected, or replaying after a restart)
// may not have applied a table the follower already has: before it
// refuses, it applies what it knows to be committed and looks again.
// Nothing is checked while the registry in force is a node's own file
// (the cluster holds no table): the files of two nodes may differ.
func (hs *httpAPI) checkForwardedCredential(ctx context.Context, p identity.Principal) error {
	if p.Cred == "" || hs.credentialHeld(p) {
		return nil
	}
	if err := hs.fsm.WaitApplied(ctx, hs.raft.CommitIndex()); err != nil {
		return err // unavailable: nothing was proposed
	}
	if hs.credentialHeld(p) {
		return nil
	}
	return errs.Errorf(errs.CodeForbidden, "principal %q no longer holds the credential the request was authenticated with (rotated or removed after the node that took the request authenticated it)", p.ID)
}

// credentialHeld reports whether the registry in force does not refuse
// p's credential: it is the cluster's table and names p as its holder, or
// it is not the table.
func (hs *httpAPI) credentialHeld(p identity.Principal) bool {
	reg := hs.principals.Load()
	if reg == nil || !reg.IsTable() {
		return true
	}
	id, ok := reg.ByCred(p.Cred)
	return ok && id == p.ID
}

// credentialsHeaderOf is the header that carries creds, or nil when no
// entry names a credential.
func credentialsHeaderOf(creds []string) http.Header {
	named := false
	for _, c := range creds {
		named = named || c != ""
	}
	if !named {
		return nil
	}
	list := make([]string, len(creds))
	for i, c := range creds {
		list[i] = c
		if c == "" {
			list[i] = "-"
		}
	}
	return http.Header{credentialsHeader: {strings.Join(list, ",")}}
}

// credentialsFrom reads the header a forwarding node sent with n commands
// (or one read): nil when it sent none, else n entries, "" for a command
// without a credential. Anything else is a peer's bug: invalid.
func credentialsFrom(h http.Header, n int) ([]string, error) {
	v := h.Get(credentialsHeader)
	if v == "" {
		return nil, nil
	}
	if got := strings.Count(v, ",") + 1; got != n { // before splitting: a peer's header is not trusted to be small
		return nil, errs.Errorf(errs.CodeInvalid, "%s names %d credentials for %d commands", credentialsHeader, got, n)
	}
	list := strings.Split(v, ",")
	for i, c := range list {
		switch {
		case c == "-":
			list[i] = ""
		case !identity.ValidCred(c):
			return nil, errs.Errorf(errs.CodeInvalid, "%s: %q is not a credential name", credentialsHeader, c)
		}
	}
	return list, nil
}
