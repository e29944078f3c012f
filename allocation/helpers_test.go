package allocation_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// fixture is testdata/allocation-fixture.json: the v0 catalog and the
// titles spec section 6 refers to (a copy of shared/specs').
type fixture struct {
	Space   string                  `json:"space"`
	Catalog []allocation.CatalogRow `json:"catalog"`
	Titles  []struct {
		Task    int                    `json:"task"`
		Title   string                 `json:"title"`
		Jaccard map[string]json.Number `json:"jaccard"`
		Binds   string                 `json:"binds"`
	} `json:"titles"`
	Negative483 []struct {
		Title string `json:"title"`
		Binds string `json:"binds"`
	} `json:"negative_483"`
}

func loadFixture(t testing.TB) fixture {
	t.Helper()
	raw, err := os.ReadFile("testdata/allocation-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// newFixtureService is a bare FSM with the fixture's space put.
func newFixtureService(t testing.TB) (*fsmtest.Local, *allocation.Service, fixture) {
	t.Helper()
	f := loadFixture(t)
	l, err := fsmtest.New(allocation.Module())
	if err != nil {
		t.Fatal(err)
	}
	s := allocation.NewService(l, l)
	if _, err := s.PutSpace(context.Background(), f.Space, allocation.PutSpaceRequest{Catalog: f.Catalog}); err != nil {
		t.Fatal(err)
	}
	return l, s, f
}

// asConflict returns err's flat 409 body, failing t if it is not one.
func asConflict(t testing.TB, what string, err error) *allocation.Conflict {
	t.Helper()
	var c *allocation.Conflict
	if !errors.As(err, &c) {
		t.Fatalf("%s: want a 409 conflict, got %v", what, err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
