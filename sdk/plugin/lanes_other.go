//go:build !unix

package plugin

import (
	"errors"
	"net"
	"os"
)

// laneSocket is the host's end of a lane socket; there are none on this
// system, whose plugins are written to over gRPC alone.
type laneSocket struct{}

func newLaneSocket() (*laneSocket, *os.File, error) {
	return nil, nil, errors.ErrUnsupported
}

func (s *laneSocket) open() (*laneClientStream, error) { return nil, errors.ErrUnsupported }

func (s *laneSocket) openConn(kind byte) (*net.UnixConn, error) { return nil, errors.ErrUnsupported }

func sendFiles(c *net.UnixConn, files []DirectFile) error { return errors.ErrUnsupported }

func receiveFiles(c *net.UnixConn) ([]int, error) { return nil, errors.ErrUnsupported }

func (s *laneSocket) Close() error { return nil }

func laneSocketFromEnv() (*net.UnixConn, error) { return nil, nil }

func acceptLanes(sock *net.UnixConn, serve func(kind byte, c net.Conn)) {}
