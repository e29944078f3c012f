package fsm

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
)

// Member metadata is replicated so that any node can find the leader's API
// address from the leader's raft id. The cluster proposes these commands;
// raft's own configuration stays the authority on who votes.

func memberUpsertSpec() CommandSpec {
	return CommandSpec{Type: CmdMemberUpsert, Name: "member_upsert", MaxVersion: 1, Internal: true,
		Apply: func(tx *Tx, cmd *log.Command) (any, error) {
			var m Member
			if err := decodePayload(cmd.Payload, &m); err != nil {
				return nil, err
			}
			if err := validateMember(m); err != nil {
				return nil, err
			}
			if err := tx.Insert(tableMembers, &m); err != nil {
				return nil, errs.Errorf(errs.CodeInternal, "member upsert: %v", err)
			}
			tx.Emit("member_upsert", m.ID, "")
			return m, nil
		}}
}

func memberRemoveSpec() CommandSpec {
	return CommandSpec{Type: CmdMemberRemove, Name: "member_remove", MaxVersion: 1, Internal: true,
		Apply: func(tx *Tx, cmd *log.Command) (any, error) {
			var m Member
			if err := decodePayload(cmd.Payload, &m); err != nil {
				return nil, err
			}
			raw, err := tx.First(tableMembers, "id", m.ID)
			if err != nil || raw == nil {
				return nil, errs.Errorf(errs.CodeNotFound, "no member %q", m.ID)
			}
			if err := tx.Delete(tableMembers, raw); err != nil {
				return nil, errs.Errorf(errs.CodeInternal, "member remove: %v", err)
			}
			tx.Emit("member_remove", m.ID, "")
			return raw.(*Member), nil
		}}
}

func validateMember(m Member) error {
	if err := bounds.Identifier("id", m.ID); err != nil {
		return err
	}
	if err := bounds.Identifier("raft_addr", m.RaftAddr); err != nil {
		return err
	}
	if err := bounds.Identifier("api_addr", m.APIAddr); err != nil {
		return err
	}
	return m.Serves.Validate()
}

// MaxMembers bounds the members query (and, in practice, a cluster).
const MaxMembers = 128

func membersQuerySpec() QuerySpec {
	return QuerySpec{Type: QueryMembers, Name: "members", Run: func(rt *ReadTx, _ []byte) (any, error) {
		return readMembers(rt)
	}}
}

func readMembers(rt *ReadTx) ([]Member, error) {
	it, err := rt.Txn.Get(tableMembers, "id")
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "members: %v", err)
	}
	out := []Member{}
	for raw := it.Next(); raw != nil && len(out) < MaxMembers; raw = it.Next() {
		out = append(out, *raw.(*Member))
	}
	return out, nil
}

// Members returns the replicated member metadata from local state: a
// copy, the caller's.
func (f *FSM) Members() []Member {
	return slices.Clone(f.sharedMembers())
}

// Member returns the metadata of the member id, if it is one. Unlike
// Members it copies no list: a follower looks up its leader's API address
// for every forwarded command. Its Serves shares its slices with the
// cached list, as the members Members returns do: read them, never change
// them.
func (f *FSM) Member(id string) (Member, bool) {
	for _, m := range f.sharedMembers() {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// sharedMembers is the member list of the current state, shared by every
// caller: read it, never change it.
func (f *FSM) sharedMembers() []Member {
	db := f.db.Load()
	changes := db.Changes(tableMembers)
	if at := f.members.Load(); at != nil && at.db == db && at.changes == changes {
		return at.members
	}
	// Read from a state as new as changes says, or newer: then the next
	// call reads again, which costs a read, never a stale answer.
	out, _ := readMembers(&ReadTx{Txn: db.Txn(false)})
	f.members.Store(&membersAt{db: db, changes: changes, members: out})
	return out
}

// membersAt is what Members read, and of which state.
type membersAt struct {
	db      *statestore.DB
	changes int64
	members []Member
}
