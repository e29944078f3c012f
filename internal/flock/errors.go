package flock

import "errors"

// ErrLocked is wrapped by Acquire's error when another holder kept the lock
// past the wait.
var ErrLocked = errors.New("locked by another holder")
