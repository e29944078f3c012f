package fsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// A ledger row's id is stored in every snapshot and looked up by every
// retry: its form must never change. The reference is the form as first
// written, with fmt.Sprintf; the parts cross the stack buffer's size.
func TestLedgerIDsKeepTheirForm(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, parts := range [][3]string{{"", "", "k"}, {"alice", "node", "go-0123"}, {"ü", "t|7:tenant-a", "k|1:2"}, {long, long, long}} {
		cmd := &log.Command{Principal: identity.Principal{ID: parts[0]}, IdemScope: parts[1], IdemKey: parts[2]}
		if got, want := principalLedgerID(cmd), fmt.Sprintf("%d:%s|%d:%s|%d:%s", len(parts[0]), parts[0], len(parts[1]), parts[1], len(parts[2]), parts[2]); got != want {
			t.Fatalf("principal-keyed id %q, want %q", got, want)
		}
		if got, want := tenantLedgerID(cmd), fmt.Sprintf("t|%d:%s|%d:%s", len(parts[1]), parts[1], len(parts[2]), parts[2]); got != want {
			t.Fatalf("tenant-keyed id %q, want %q", got, want)
		}
	}
}
