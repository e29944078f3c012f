package statestore

// SetMaxUndo sets the undo log's bound (see maxUndo) until the returned
// function puts it back: a small bound makes the tests fork transactions.
func SetMaxUndo(n int) (restore func()) {
	old := maxUndo
	maxUndo = n
	return func() { maxUndo = old }
}

// OwnerCheck reports whether this build checks write-transaction
// ownership (race builds).
const OwnerCheck = ownerCheck
