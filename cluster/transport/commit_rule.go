package transport

import "github.com/hashicorp/raft"

// commitOnlyWhatItCarries holds a follower to the Raft paper's commit rule:
// on AppendEntries, commit min(leaderCommit, index of the last new entry).
// hashicorp/raft (v1.7.3) commits min(leaderCommit, its own last index)
// instead, and its own log can run past the request with a stale tail
// (entries a deposed leader appended that the cluster never committed,
// left where the request's entries all matched): the follower then applies
// them, and its state differs from the cluster's for good (until a
// snapshot install replaces it). TestFollowerDoesNotCommitAStaleTail builds
// that with raft itself; the crash loop once saw a divergence of that
// shape, with its cause unconfirmed (RELIABILITY.md).
//
// The request is copied (the in-memory transport hands over the leader's
// own), and its commit index lowered to the last index it vouches for:
// what it carries, or its previous entry when it carries nothing. A later request carries the rest, so nothing committed waits
// longer than the next round trip. Heartbeats (no previous entry, no
// commit index) do not come this way.
func commitOnlyWhatItCarries(req *raft.AppendEntriesRequest) *raft.AppendEntriesRequest {
	vouched := req.PrevLogEntry
	if n := len(req.Entries); n > 0 {
		vouched = req.Entries[n-1].Index
	}
	if req.LeaderCommitIndex <= vouched {
		return req
	}
	capped := *req
	capped.LeaderCommitIndex = vouched
	return &capped
}
