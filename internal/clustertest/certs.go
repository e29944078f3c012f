package clustertest

import (
	"testing"

	"github.com/arbiterhq/arbiter/internal/testcert"
)

// CA is a throwaway certificate authority for tests.
type CA = testcert.CA

// NewCA makes a CA valid for a day.
func NewCA(t testing.TB, name string) *CA { return testcert.NewCA(t, name) }
