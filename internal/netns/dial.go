package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialContext opens a connection from the client namespace. Use it as an
// http.Transport's DialContext.
func (nw *Net) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := nw.Do(Client, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Listen opens a listener inside endpoint e's namespace.
func (nw *Net) Listen(e int, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := nw.Do(e, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// Do runs f on an OS thread switched into endpoint e's namespace: the
// sockets f makes stay in that namespace for their life. f must not hand
// work to other goroutines (they run elsewhere). If the thread cannot be
// switched back, it stays locked, so Go ends it with the goroutine
// instead of reusing it.
func (nw *Net) Do(e int, f func() error) error {
	target, err := os.Open(filepath.Join("/run/netns", nw.Name(e)))
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: own namespace: %w", err)
	}
	defer home.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: setns: %w", err)
	}
	ferr := f()
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netns: switching back: %w (after %v)", err, ferr)
	}
	runtime.UnlockOSThread()
	return ferr
}
