package cluster

import (
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
)

// The credential that authenticated a principal (identity.Principal.Cred)
// never enters the log: a replica of an older binary could not decode a
// command that held it, and would refuse what its peers apply. The node
// that authenticated a request sends it beside what it forwards, in
// credentialsHeader: the credentials of a batch's commands in order ("-"
// for a command without one), or the one of a linearizable read. The
// leader checks each against the table it has applied
// (fsm.FSM.CheckPrincipal) before it proposes the command or answers the
// read, as it does for its own requests. A leader of an older binary
// ignores the header and checks as before (tenants and roles, in Apply).
const credentialsHeader = "Arbiter-Credentials"

// checkCredential is the leader's check of a principal that names its
// credential, before its command is proposed; one that names none meets
// the table in Apply only.
func checkCredential(f *fsm.FSM, p identity.Principal) error {
	if p.Cred == "" {
		return nil
	}
	return f.CheckPrincipal(p)
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
	list := strings.Split(v, ",")
	if len(list) != n {
		return nil, errs.Errorf(errs.CodeInvalid, "%s names %d credentials for %d commands", credentialsHeader, len(list), n)
	}
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
