package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// maxNodeBundle bounds one node's bundle as the CLI reads it.
const maxNodeBundle = 256 << 20

func (a *app) debugCommand() *cobra.Command {
	return group("debug", "gather what a problem report needs (consul debug)", "", a.debugBundleCommand())
}

func (a *app) debugBundleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle [--cluster] [--out FILE]",
		Short: "each node's status, metrics, goroutine and heap profiles, configuration and recent log lines, in one tar.gz",
		Long: `bundle asks each endpoint (--addr, or with --cluster every member) for its
debug bundle — status, metrics, goroutines, heap profile, configuration with
its secrets left out (the peer token, principals' hashes and TLS keys are
only said to be set), and its last log lines — and writes them into one
tar.gz (--out, default arbiter-debug-<time>.tar.gz), one NODE.tar.gz inside
per endpoint. A node that cannot be asked is named in errors.txt inside, and
the command exits 1. GET /v1/debug/bundle on each; the admin role.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	all := cmd.Flags().Bool("cluster", false, "ask every member of the cluster, not only --addr")
	out := cmd.Flags().String("out", "", "the file to write (default arbiter-debug-<time>.tar.gz in this directory)")
	cmd.RunE = func(*cobra.Command, []string) error {
		ctx, cancel := a.context()
		defer cancel()
		bases, err := a.endpoints(ctx, *all)
		if err != nil {
			return err
		}
		path := *out
		if path == "" {
			path = "arbiter-debug-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
		}
		failed, err := a.writeDebugBundle(ctx, path, bases)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s (%d of %d endpoints)\n", path, len(bases)-len(failed), len(bases))
		if len(failed) > 0 {
			return fmt.Errorf("no bundle from %s", strings.Join(failed, ", "))
		}
		return nil
	}
	return cmd
}

// writeDebugBundle writes every base's bundle into the tar.gz at path and
// returns the bases it could not get one from.
func (a *app) writeDebugBundle(ctx context.Context, path string, bases []string) (failed []string, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, usageErrorf("--out: %v", err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	var problems []string
	for _, base := range bases {
		body, err := a.nodeBundle(ctx, base)
		if err != nil {
			failed = append(failed, base)
			problems = append(problems, fmt.Sprintf("%s: %v", base, err))
			continue
		}
		name := bundleName(base) + ".tar.gz"
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		text := []byte(strings.Join(problems, "\n") + "\n")
		if err := tw.WriteHeader(&tar.Header{Name: "errors.txt", Mode: 0o600, Size: int64(len(text)), ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(text); err != nil {
			return nil, err
		}
	}
	err = errors.Join(tw.Close(), zw.Close(), f.Close())
	return failed, err
}

// nodeBundle is base's GET /v1/debug/bundle.
func (a *app) nodeBundle(ctx context.Context, base string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/debug/bundle", nil)
	if err != nil {
		return nil, err
	}
	token, err := a.bearer()
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxNodeBundle+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: %.300s", resp.Status, body)
	case len(body) > maxNodeBundle:
		return nil, fmt.Errorf("the bundle is larger than %d bytes", maxNodeBundle)
	}
	return body, nil
}

// bundleName is a file name for base's bundle: its host and port.
func bundleName(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return strings.ReplaceAll(u.Host, ":", "_")
	}
	return strings.NewReplacer("/", "_", ":", "_").Replace(base)
}
