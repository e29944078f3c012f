package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
)

// Exit statuses: one rule for every command, core and domain alike
// (TestExitRule pins it). Scripts tell a wrong request from a failed
// call, and a decided "no" from both:
//
//	0  done
//	1  the call failed: unreachable, unavailable, unauthorized, forbidden,
//	   not found, internal; for a write, the outcome may be unknown
//	2  the request is wrong, nothing was done: a bad command line, or the
//	   cluster refused the request as invalid (422) or too large (413)
//	3  decided, and not done: create found the node, cas did not swap, a
//	   conflict, a stale fence, exhausted capacity (every 409 answer)
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotTaken = 3
)

// usageError is a wrong command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// notTaken is a decided answer that did not do what was asked; the
// answer has been printed.
type notTaken struct{ what string }

func (e notTaken) Error() string { return e.what }

// exitStatus maps a command's error to the process's exit status.
func exitStatus(err error) int {
	var u usageError
	var n notTaken
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &n):
		return exitNotTaken
	}
	if errs.IsOutcomeUnknown(err) {
		return exitError
	}
	switch errs.Status(errs.CodeOf(err)) {
	case http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		return exitUsage
	case http.StatusConflict:
		return exitNotTaken
	}
	return exitError
}

// errorText is err as the CLI prints it. An error whose command may or
// may not have been applied says so: the cluster marks it with a flag
// (errs.Error.OutcomeUnknown), and the message alone ("unavailable: ...:
// EOF") reads like a refusal, after which a retry without the same
// idempotency key could apply the command twice.
func errorText(err error) string {
	if errs.IsOutcomeUnknown(err) {
		return err.Error() + " (outcome unknown: the command may or may not have been applied; retry it with the same idempotency key)"
	}
	return err.Error()
}
