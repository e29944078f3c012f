package retry_test

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/retry"
)

// A write whose outcome is unknown is sent again with the same
// idempotency key until the cluster answers.
func ExampleUnknown() {
	attempts := 0
	create := func(ctx context.Context) (string, error) { // e.g. nodes.Client.CreateIfAbsent with IdempotencyKey "req-42"
		attempts++
		if attempts == 1 {
			return "", errs.AdviseRetry(errs.Unknown("leadership lost while committing"), "req-42")
		}
		return "created (replayed)", nil
	}
	res, err := retry.Unknown(context.Background(), create)
	fmt.Println(res, err, attempts)
	// Output: created (replayed) <nil> 2
}
