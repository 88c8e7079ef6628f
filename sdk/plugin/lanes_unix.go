//go:build unix

package plugin

import (
	"fmt"
	"io"
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

// open makes a new write lane and hands the plugin its end.
func (s *laneSocket) open() (*laneClientStream, error) {
	c, err := s.openConn(laneWriteSeries)
	if err != nil {
		return nil, err
	}
	return &laneClientStream{l: newLaneConn(c)}, nil
}

// openConn makes a new lane of kind (laneWriteSeries, laneDirect) and hands
// the plugin its end.
func (s *laneSocket) openConn(kind byte) (*net.UnixConn, error) {
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, laneBroken(fmt.Errorf("opening a lane: %w", err))
	}
	s.mu.Lock()
	_, _, err = s.conn.WriteMsgUnix([]byte{kind}, syscall.UnixRights(int(theirs.Fd())), nil)
	s.mu.Unlock()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, laneBroken(fmt.Errorf("handing the plugin a lane: %w", err))
	}
	c, err := unixConn(ours, "sluice-lane")
	if err != nil {
		return nil, laneBroken(fmt.Errorf("opening a lane: %w", err))
	}
	return c, nil
}

// sendFiles sends the descriptors of files over a direct lane, at most
// maxDirectFiles a message, the last message's byte directLastFiles (one
// message with none when files is empty).
func sendFiles(c *net.UnixConn, files []DirectFile) error {
	for {
		n := min(len(files), maxDirectFiles)
		fds := make([]int, n)
		for i, f := range files[:n] {
			fds[i] = int(f.Fd())
		}
		files = files[n:]
		b := []byte{directMoreFiles}
		if len(files) == 0 {
			b[0] = directLastFiles
		}
		var oob []byte
		if n > 0 {
			oob = syscall.UnixRights(fds...)
		}
		if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
			return err
		}
		if len(files) == 0 {
			return nil
		}
	}
}

// receiveFiles receives the descriptors sendFiles sends. It returns those
// that came even when it fails, for the caller to close.
func receiveFiles(c *net.UnixConn) ([]int, error) {
	var fds []int
	b := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4*maxDirectFiles))
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
		if oobn > 0 {
			msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				got, rerr := syscall.ParseUnixRights(&m)
				if rerr == nil {
					fds = append(fds, got...)
				}
			}
			if perr != nil && err == nil {
				err = perr
			}
		}
		switch {
		case err != nil:
			return fds, err
		case flags&syscall.MSG_CTRUNC != 0:
			return fds, fmt.Errorf("the plugin sent more than %d files in one message", maxDirectFiles)
		case n == 0:
			return fds, io.ErrUnexpectedEOF
		case b[0] == directLastFiles:
			return fds, nil
		case b[0] != directMoreFiles:
			return fds, fmt.Errorf("the plugin sent %q where its files belong", b[0])
		}
	}
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
// (given the lane's kind) on a goroutine of its own, until the host closes
// sock (or exits).
func acceptLanes(sock *net.UnixConn, serve func(kind byte, c net.Conn)) {
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
				go serve(buf[0], c)
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
