package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command and subcommand answers --help (and -h) on standard
// output with exit status 0, as etcdctl and kubectl do.
func TestHelpExitsZeroForEveryCommand(t *testing.T) {
	a := &app{getenv: func(string) string { return "" }}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(a.rootCommand(), nil)
	if len(paths) < 90 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, path := range paths {
		for _, flag := range []string{"--help", "-h"} {
			r := runCLI(t, nil, "", append(append([]string{}, path...), flag)...)
			name := strings.Join(append([]string{"arbiter"}, path...), " ")
			if r.status != 0 || r.stdout == "" || r.stderr != "" {
				t.Errorf("%s %s: status %d, stdout %d bytes, stderr %q", name, flag, r.status, len(r.stdout), r.stderr)
			}
		}
	}
	// arbiter --help lists every domain command with its one-line summary.
	root := runCLI(t, nil, "", "--help")
	for _, name := range []string{"concept", "space", "task", "workitem", "capacity", "projection"} {
		if !regexp.MustCompile(`(?m)^  ` + name + ` +\S`).MatchString(root.stdout) {
			t.Errorf("arbiter --help does not list %s with a summary:\n%s", name, root.stdout)
		}
	}
	if r := runCLI(t, nil, "", "help", "node", "cas"); r.status != 0 || !strings.Contains(r.stdout, "--if") {
		t.Errorf("arbiter help node cas: %+v", r)
	}
}

// Completion scripts, version, and command-line mistakes.
func TestCompletionVersionAndUsageErrors(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if r := runCLI(t, nil, "", "completion", shell); r.status != 0 || !strings.Contains(r.stdout, "arbiter") {
			t.Errorf("completion %s: status %d, %d bytes", shell, r.status, len(r.stdout))
		}
	}
	if r := runCLI(t, nil, "", "version"); r.status != 0 || !strings.Contains(r.stdout, "arbiter") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("version: %+v", r)
	}
	for _, args := range [][]string{
		{"no-such-command"},
		{"snapshot", "bogus"},
		{"node", "get"}, // missing ID
		{"node", "get", "x", "--no-such-flag"},
		{"status", "-o", "yaml"},
		{"node", "cas", "x", "--set", "novalue"},
	} {
		r := runCLI(t, nil, "", args...)
		if r.status != exitUsage || !strings.Contains(r.stderr, "--help") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d and a pointer to --help", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
}

// Go's single-dash spelling of long flags still works.
func TestGoStyleFlags(t *testing.T) {
	a := &app{getenv: func(string) string { return "" }}
	root := a.rootCommand()
	got := goStyleFlags(root, []string{"node", "get", "-addr", "http://x", "-o", "json", "-stale", "id", "--", "-addr"})
	want := []string{"node", "get", "--addr", "http://x", "-o", "json", "--stale", "id", "--", "-addr"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("goStyleFlags: %q, want %q", got, want)
	}
}
