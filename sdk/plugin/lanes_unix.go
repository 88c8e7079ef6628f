//go:build unix

package plugin

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// laneSocket is the host's end of a plugin's lane socket, over which it
// hands the plugin one end of each new lane.
type laneSocket struct {
	mu   sync.Mutex
	conn *net.UnixConn
}

// newLaneSocket makes a lane socket: the host's end, and the plugin's to
// pass at spawn.
func newLaneSocket() (*laneSocket, *os.File, error) {
	host, plugin, err := socketPair()
	if err != nil {
		return nil, nil, fmt.Errorf("lane socket: %w", err)
	}
	c, err := unixConn(host, "sluice-lanes")
	if err != nil {
		plugin.Close()
		return nil, nil, fmt.Errorf("lane socket: %w", err)
	}
	return &laneSocket{conn: c}, plugin, nil
}

// open makes a new lane and hands the plugin its end.
func (s *laneSocket) open() (*laneClientStream, error) {
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, laneBroken(fmt.Errorf("opening a write lane: %w", err))
	}
	s.mu.Lock()
	_, _, err = s.conn.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(theirs.Fd())), nil)
	s.mu.Unlock()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, laneBroken(fmt.Errorf("handing the plugin a write lane: %w", err))
	}
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, laneBroken(fmt.Errorf("opening a write lane: %w", err))
	}
	return &laneClientStream{l: newLaneConn(c)}, nil
}

// Close closes the host's end; the plugin stops taking lanes.
func (s *laneSocket) Close() error { return s.conn.Close() }

// laneSocketFromEnv returns the lane socket the host passed, or nil.
func laneSocketFromEnv() (*net.UnixConn, error) {
	v := os.Getenv(envLaneFD)
	if v == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("malformed lane socket %s=%q", envLaneFD, v)
	}
	f := os.NewFile(uintptr(fd), "sluice-lanes")
	if f == nil {
		return nil, fmt.Errorf("lane socket descriptor %d is not open", fd)
	}
	return unixConn(f, "sluice-lanes")
}

// acceptLanes serves every lane the host hands over sock, each with serve
// on a goroutine of its own, until the host closes sock (or exits).
func acceptLanes(sock *net.UnixConn, serve func(net.Conn)) {
	defer sock.Close()
	raw, err := sock.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4*16))
	for {
		var n, oobn int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			for {
				n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, recvCloseOnExec)
				if rerr != syscall.EINTR {
					return rerr != syscall.EAGAIN
				}
			}
		})
		if err != nil || rerr != nil || n == 0 && oobn == 0 {
			return
		}
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			fds, err := syscall.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, fd := range fds {
				if recvCloseOnExec == 0 {
					syscall.CloseOnExec(fd) // as soon as can be, where recvmsg cannot
				}
				f := os.NewFile(uintptr(fd), "sluice-lane")
				c, err := net.FileConn(f)
				f.Close()
				if err != nil {
					continue // the host's Recv finds the lane closed
				}
				go serve(c)
			}
		}
	}
}

// socketPair returns the two ends of a new Unix stream socket pair, closed
// on exec. The fork lock keeps a process started meanwhile (another plugin)
// from inheriting them: an end held open elsewhere would hide the end of
// the process it belongs to.
func socketPair() (*os.File, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "sluice-lane"), os.NewFile(uintptr(fds[1]), "sluice-lane"), nil
}

// unixConn wraps a socket file as a *net.UnixConn and closes f (the
// connection holds a duplicate).
func unixConn(f *os.File, name string) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s is not a Unix socket", name)
	}
	return uc, nil
}
