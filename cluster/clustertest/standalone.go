package clustertest

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
)

// standalone is the testing.TB of a cluster from Start: temp dirs and
// cleanups it runs on Close, Fatal as a panic Start turns into its error.
// It overrides every method of testing.TB; the embedded interface only
// provides the unexported one that makes it a testing.TB.
type standalone struct {
	testing.TB
	verbose bool

	mu       sync.Mutex
	cleanups []func()
	dirs     []string
	failed   bool
	once     sync.Once
}

// fatal is a standalone cluster's Fatal.
type fatal struct{ msg string }

func (f fatal) Error() string { return "clustertest: " + f.msg }

func newStandalone(verbose bool) *standalone { return &standalone{verbose: verbose} }

func (s *standalone) cleanup() {
	s.once.Do(func() {
		s.mu.Lock()
		fns, dirs := s.cleanups, s.dirs
		s.mu.Unlock()
		for i := len(fns) - 1; i >= 0; i-- {
			fns[i]()
		}
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	})
}

func (s *standalone) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *standalone) TempDir() string {
	d, err := os.MkdirTemp("", "arbiter-clustertest-*")
	if err != nil {
		s.Fatalf("temp dir: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirs = append(s.dirs, d)
	return d
}

func (s *standalone) Fatal(args ...any) { s.fail(fmt.Sprint(args...)) }
func (s *standalone) Fatalf(format string, args ...any) {
	s.fail(fmt.Sprintf(format, args...))
}
func (s *standalone) FailNow() { s.fail("FailNow") }

func (s *standalone) fail(msg string) {
	s.mu.Lock()
	s.failed = true
	s.mu.Unlock()
	panic(fatal{msg})
}

func (s *standalone) Error(args ...any)                 { s.Log(args...); s.Fail() }
func (s *standalone) Errorf(format string, args ...any) { s.Logf(format, args...); s.Fail() }
func (s *standalone) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}
func (s *standalone) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
func (s *standalone) Helper()      {}
func (s *standalone) Name() string { return "clustertest" }
func (s *standalone) Log(args ...any) {
	if s.verbose {
		fmt.Fprintln(os.Stderr, args...)
	}
}
func (s *standalone) Logf(format string, args ...any) {
	if s.verbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
func (s *standalone) Setenv(key, value string)      { _ = os.Setenv(key, value) }
func (s *standalone) Chdir(dir string)              { _ = os.Chdir(dir) }
func (s *standalone) Skip(args ...any)              { s.fail(fmt.Sprint(args...)) }
func (s *standalone) SkipNow()                      { s.fail("SkipNow") }
func (s *standalone) Skipf(format string, a ...any) { s.fail(fmt.Sprintf(format, a...)) }
func (s *standalone) Skipped() bool                 { return false }
func (s *standalone) Context() context.Context      { return context.Background() }
func (s *standalone) Output() io.Writer             { return io.Discard }
func (s *standalone) Attr(key, value string)        {}
func (s *standalone) ArtifactDir() string           { return s.TempDir() }
