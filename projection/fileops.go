package projection

import "os"

// fileOps are the file system calls whose failure a write must survive
// (tests inject failures through them).
type fileOps interface {
	CreateTemp(dir, pattern string) (tempFile, error)
	Rename(from, to string) error
	SyncDir(dir string) error
}

// tempFile is the part of *os.File a write uses.
type tempFile interface {
	Name() string
	Chmod(mode os.FileMode) error
	Write(b []byte) (int, error)
	Sync() error
	Close() error
}

type osOps struct{}

func (osOps) CreateTemp(dir, pattern string) (tempFile, error) { return os.CreateTemp(dir, pattern) }
func (osOps) Rename(from, to string) error                     { return os.Rename(from, to) }

// SyncDir fsyncs a directory, making the entries created, renamed or
// removed in it durable.
func (osOps) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
