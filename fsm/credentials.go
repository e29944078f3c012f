package fsm

import "github.com/arbiterhq/arbiter/errs"

// A command's principal may name the credential that authenticated it
// (identity.Principal.Cred), for a module's Authorize to check against
// the log's own state: a token rotated away then stops acting even
// through a node that had not applied the rotation when it took the
// request. The field is new to the envelope, and log.Decode refuses
// what it does not know, so it travels only once the cluster enables the
// version the declaring module names (Module.Credentials): every voter
// then decodes it.

// CarriesCredentials reports whether a node may keep the credential in
// a command it proposes: the enabled set of its applied state includes
// the version Module.Credentials names. A node whose state lags behind
// the enabling proposes without it (and its commands go unchecked for
// the credential, as before); one whose state lags behind a lowering
// proposes with it, and Apply refuses the command (credentialsRefusal).
func (f *FSM) CarriesCredentials() bool {
	if f.credentials == nil {
		return false
	}
	e := f.enabled.Load()
	return e != nil && e.Allows(f.credentials.Type, f.credentials.Version)
}

// credentialsRefusal refuses, identically on every replica, a command
// whose principal names a credential while the cluster does not enable
// credentials in commands: a replica of an older binary refuses it as
// undecodable, and neither refusal changes the state, so they agree.
// Unavailable: the same request, sent again, is proposed without it.
func (f *FSM) credentialsRefusal(m *meta, cred string) *errs.Error {
	if cred == "" {
		return nil
	}
	if f.credentials != nil && m.Enabled != nil && m.Enabled.Allows(f.credentials.Type, f.credentials.Version) {
		return nil
	}
	return errs.New(errs.CodeUnavailable, "the command names its principal's credential, which this cluster does not enable (its enabled set changed while the command was in flight): send it again")
}
