package access

import (
	"slices"

	"github.com/arbiterhq/arbiter/identity"
)

// PutRequest adds a principal (POST /v1/principals), or replaces one of
// the same id when Replace is set. Credentials are hashes only: the hex
// SHA-256 of each bearer token (identity.HashToken; `arbiter principal
// add` makes the token on the client and sends only this) and of each
// client certificate's DER.
type PutRequest struct {
	ID          string   `json:"id"`
	Tenants     []string `json:"tenants"`
	Roles       []string `json:"roles"`
	TokenSHA256 []string `json:"token_sha256,omitempty"`
	CertSHA256  []string `json:"cert_sha256,omitempty"`
	Replace     bool     `json:"replace,omitempty"`
}

// RotateRequest replaces a principal's token hashes (POST
// /v1/principals/{id}/rotate); its certificate hashes stay.
type RotateRequest struct {
	ID          string   `json:"-"`
	TokenSHA256 []string `json:"token_sha256"`
}

// PrincipalInfo is a principal as the API shows it: no hash, only a
// fingerprint of each credential ("sha256:" and the hash's first 8 hex
// digits), enough to tell two tokens apart and nothing to guess one by.
type PrincipalInfo struct {
	ID       string   `json:"id" msgpack:"id"`
	Tenants  []string `json:"tenants" msgpack:"tenants"`
	Roles    []string `json:"roles" msgpack:"roles"`
	Tokens   []string `json:"tokens" msgpack:"tokens"`
	Certs    []string `json:"certs" msgpack:"certs"`
	Source   string   `json:"source" msgpack:"source"`
	SetIndex uint64   `json:"set_index" msgpack:"set_index"`
	SetAtMs  int64    `json:"set_at_ms" msgpack:"set_at_ms"`
}

// ListResult is the cluster's principal table (GET /v1/principals).
// Configured is false while the cluster holds none: each node then
// authenticates with its own --principals file. Source is where the last
// change came from (file or admin), FileVersion the newest file version
// the cluster took, Index the log index of the last change.
type ListResult struct {
	Configured  bool            `json:"configured" msgpack:"configured"`
	Source      string          `json:"source,omitempty" msgpack:"source"`
	FileVersion uint64          `json:"file_version" msgpack:"file_version"`
	Index       uint64          `json:"index" msgpack:"index"`
	Digest      string          `json:"digest,omitempty" msgpack:"digest"`
	Principals  []PrincipalInfo `json:"principals" msgpack:"principals"`
}

// ChangeResult is the answer of a put, remove or rotate: the principal
// as it is now (as it was, for a removal), and the table's size and
// digest after the change, committed at Index. Every node refuses a
// removed principal's credentials, and a rotated principal's old token,
// as soon as it has applied Index.
type ChangeResult struct {
	Principal PrincipalInfo `json:"principal" msgpack:"principal"`
	Created   bool          `json:"created,omitempty" msgpack:"created"`
	Removed   bool          `json:"removed,omitempty" msgpack:"removed"`
	Index     uint64        `json:"index" msgpack:"index"`
	Count     int           `json:"count" msgpack:"count"`
	Digest    string        `json:"digest" msgpack:"digest"`
}

// SeedResult is the answer of a seed: Applied when the file's principals
// became the table; else the cluster's table is kept (Source,
// FileVersion, Index, Count and Digest are the table's).
type SeedResult struct {
	Applied     bool   `json:"applied" msgpack:"applied"`
	Source      string `json:"source" msgpack:"source"`
	FileVersion uint64 `json:"file_version" msgpack:"file_version"`
	Index       uint64 `json:"index" msgpack:"index"`
	Count       int    `json:"count" msgpack:"count"`
	Digest      string `json:"digest" msgpack:"digest"`
}

// Fingerprint is how the API shows a credential hash: "sha256:" and its
// first 8 hex digits.
func Fingerprint(hash string) string {
	if len(hash) > 8 {
		hash = hash[:8]
	}
	return "sha256:" + hash
}

func fingerprints(hashes []string) []string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = Fingerprint(h)
	}
	return out
}

func info(r *principalRow) PrincipalInfo {
	return PrincipalInfo{ID: r.ID, Tenants: slices.Clone(r.Tenants), Roles: slices.Clone(r.Roles),
		Tokens: fingerprints(r.TokenSHA256), Certs: fingerprints(r.CertSHA256), Source: r.Source, SetIndex: r.SetIndex, SetAtMs: r.SetAtMs}
}

func changeResult(r *principalRow, created bool, after []identity.PrincipalConfig, index uint64) *ChangeResult {
	return &ChangeResult{Principal: info(r), Created: created, Index: index, Count: len(after), Digest: Digest(after)}
}

func seedResult(src *sourceRow, list []identity.PrincipalConfig, applied bool) *SeedResult {
	return &SeedResult{Applied: applied, Source: src.Source, FileVersion: src.FileVersion, Index: src.Index, Count: len(list), Digest: Digest(list)}
}
