package cluster_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

var updateDataDir = flag.Bool("update-datadir", false, "rewrite testdata/datadir-*.tar.gz with this binary (only before a change of the on-disk format is meant)")

// dataDirFixtures are data directories written by an earlier binary, one
// per log store; the name says which commit wrote it.
var dataDirFixtures = map[string]string{
	"wal":  "testdata/datadir-wal-16d8d1b.tar.gz",
	"bolt": "testdata/datadir-bolt-16d8d1b.tar.gz",
}

// A data directory written by an earlier binary (a snapshot, log entries
// after it, the member record) opens with this one: the node starts, leads
// its one-node cluster and serves every record written before, and takes
// new writes. Restructuring packages must not change what is on disk.
func TestDataDirWrittenByAnEarlierBinaryOpens(t *testing.T) {
	for kind, archive := range dataDirFixtures {
		t.Run(kind, func(t *testing.T) {
			if *updateDataDir {
				writeDataDirFixture(t, kind, archive)
			}
			dir := t.TempDir()
			untarGz(t, archive, dir)
			node := startOn(t, dir, false)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := node.WaitReady(ctx); err != nil {
				t.Fatalf("the node did not become ready on the old data directory: %v", err)
			}
			nc := nodes.On(node)
			for i := range fixtureNodes {
				got, err := nc.Get(ctx, fmt.Sprintf("old-%02d", i), fsm.Linearizable)
				if err != nil || got.Version != 1 {
					t.Fatalf("old-%02d: %+v %v", i, got, err)
				}
			}
			rec, err := authority.NewService(node, node, nil).Get(ctx, "OLD-7", "tenant-old")
			if err != nil || rec.State != authority.Reserved || rec.OwnerRef != "owner-old" {
				t.Fatalf("the concept claim written before: %+v %v", rec, err)
			}
			if res, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "new-1"}); err != nil || !res.Created {
				t.Fatalf("a new write: %+v %v", res, err)
			}
		})
	}
}

// fixtureNodes is how many nodes the fixture holds: some in its snapshot,
// some in the log after it.
const fixtureNodes = 40

// startOn starts a one-node cluster on dir (bootstrapping it if asked).
func startOn(t *testing.T, dir string, bootstrap bool) *cluster.Node {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.Domains = builtin.Domains()
	cfg.ID, cfg.DataDir = "n1", dir
	cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap = bootstrap
	cfg.ChangeAddress = !bootstrap // the fixture's raft address was another port
	node, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatalf("start on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = node.Shutdown(context.Background()) })
	return node
}

// writeDataDirFixture writes the fixture archive with this binary.
func writeDataDirFixture(t *testing.T, kind, archive string) {
	dir := t.TempDir()
	node := func() *cluster.Node {
		c := cluster.DefaultConfig()
		c.Domains = builtin.Domains()
		c.ID, c.DataDir = "n1", dir
		c.RaftAddr, c.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.Bootstrap = true
		c.LogStore = kind
		c.WALSegmentBytes = 64 << 10 // a small archive
		n, err := cluster.New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := node.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	nc := nodes.On(node)
	create := func(i int) {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("old-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fixtureNodes / 2 {
		create(i)
	}
	policies, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "OLD", Min: 1, Max: 99, PolicyVersion: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authority.NewService(node, node, policies).Reserve(ctx, authority.ReserveRequest{ConceptID: "OLD-7", TenantRef: "tenant-old",
		OwnerRef: "owner-old", RequestRef: "req-old", PurposeDigest: "sha256:old", RepositoryRef: "repo-old", TTLMs: (30 * 24 * time.Hour).Milliseconds()}); err != nil {
		t.Fatal(err)
	}
	if err := node.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := fixtureNodes / 2; i < fixtureNodes; i++ {
		create(i)
	}
	if err := node.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	tarGz(t, dir, archive)
	t.Logf("wrote %s", archive)
}

func tarGz(t *testing.T, dir, archive string) {
	t.Helper()
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), time.Unix(0, 0)
		if err := tw.WriteHeader(hdr); err != nil || d.IsDir() {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = errors.Join(tw.Close(), zw.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// untarGz unpacks archive into dir: regular files and directories only,
// each under dir, at most 256 MiB in all.
func untarGz(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	budget := int64(256 << 20)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q leaves the directory", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if budget -= hdr.Size; budget < 0 {
				t.Fatal("archive larger than 256 MiB")
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode)&0o700)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(out, io.LimitReader(tr, hdr.Size))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("archive entry %q of type %c", hdr.Name, hdr.Typeflag)
		}
	}
}
