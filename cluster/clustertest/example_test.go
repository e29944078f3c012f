package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
)

// LockService is a service's own first-writer logic: the first caller to
// acquire a lock holds it, and everyone else learns who does. It is built
// on the node primitives' create-if-absent, through any node (package
// client, as a program on another host calls the cluster).
type LockService struct{ nodes *client.Nodes }

// Acquire asks for the lock name on behalf of owner and returns its holder.
// The idempotency key makes a retry after an unknown outcome return this
// owner's own answer.
func (s LockService) Acquire(ctx context.Context, name, owner string) (string, error) {
	res, err := s.nodes.Create(ctx, client.CreateRequest{
		NodeID: "lock/" + name, Properties: map[string]any{"owner": owner}, IdempotencyKey: owner,
	})
	if err != nil {
		return "", err
	}
	var holder string
	err = json.Unmarshal(res.Node.Properties["owner"], &holder)
	return holder, err
}

// lockModel is the service's contract as a porcupine model: the state is
// the holder ("" while free); the first acquire takes the lock, every
// acquire answers the holder.
var lockModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		holder, owner := state.(string), input.(string)
		if holder == "" {
			holder = owner
		}
		if clustertest.IsUnknown(output) {
			return true, holder // applied, as far as the model can tell
		}
		return output.(string) == holder, holder
	},
}

// A lock service tests its own first-writer logic against a 3-node
// cluster: six clients race for a lock while the leader is cut off from
// the others, then ask again once the partition heals. The history of
// what each client was told must be linearizable against the service's
// model, whatever the partition did to the calls it caught.
func Example_lockService() {
	c, err := clustertest.Start(clustertest.Options{Nodes: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	history := clustertest.NewHistory()
	acquire := func(id, node int) {
		api, err := client.New([]string{c.URL(node)}) // a client bound to one node
		if err != nil {
			fmt.Println(err)
			return
		}
		defer api.Close()
		locks := LockService{api.Nodes()}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		owner := fmt.Sprintf("client-%d", id)
		op := history.Call(id, owner)
		holder, err := locks.Acquire(ctx, "build", owner)
		if err != nil {
			op.Fail(err, true) // may have been applied: kept as unknown
			return
		}
		op.Return(holder)
	}
	race := func() {
		var wg sync.WaitGroup
		for id := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				acquire(id, id%c.Size())
			}()
		}
		wg.Wait()
	}

	c.Isolate(c.WaitLeader(10 * time.Second))
	race()
	c.Heal()
	c.WaitLeader(10 * time.Second)
	race()

	fmt.Println("linearizable:", clustertest.CheckOperations(lockModel, history, 10*time.Second) == porcupine.Ok)
	// Output:
	// linearizable: true
}
