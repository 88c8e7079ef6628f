package plugin

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// A write lane (protocol 1.6) carries one WriteSeries stream over a plain
// stream socket instead of gRPC: the same messages, framed by hand. A small
// write over gRPC costs each process HTTP/2 and TLS framing and hand-offs
// between three goroutines; on a lane the writer's goroutine writes the
// frame, and the reader's reads it. A round trip of a small message between
// two processes took 200 µs of CPU over gRPC on the development VM and 55 µs
// over a socket, and a model of 20,000 small tensors makes thousands of them.
//
// Frames: a little-endian u32 length n, then n bytes: a kind byte and the
// payload.
const (
	frameMessage = 'm' // a WriteRequest (host) or a WriteAck (plugin)
	frameEnd     = 'e' // host: no more requests (CloseSend); no payload
	frameStatus  = 's' // plugin: how the stream ended, a google.rpc.Status; the last frame
	frameHashTo  = 'h' // plugin, on a direct lane: a DirectHashTo (1.9)
)

// envLaneFD names the descriptor of the lane socket the host passes at
// spawn: the socket over which it sends the plugin one end of each lane.
const envLaneFD = "SLUICE_LANE_FD"

// errLaneCanceled is what the plugin's end of a lane reads when the host
// closed it without ending its requests: the host gave up on the stream.
var errLaneCanceled = status.Error(codes.Canceled, "the host canceled the write lane")

// laneConn frames messages over one lane's socket. Sends may come from
// several goroutines (a plugin acknowledges slots as its sink releases them);
// receives come from one at a time.
type laneConn struct {
	conn net.Conn
	r    *bufio.Reader
	rbuf []byte

	wmu  sync.Mutex
	wbuf []byte
}

func newLaneConn(conn net.Conn) *laneConn {
	return &laneConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
}

// writeFrame sends one frame of kind with m (nil for none) as its payload.
func (l *laneConn) writeFrame(kind byte, m proto.Message) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	b := append(l.wbuf[:0], 0, 0, 0, 0, kind)
	if m != nil {
		var err error
		if b, err = (proto.MarshalOptions{}).MarshalAppend(b, m); err != nil {
			return fmt.Errorf("write lane: encoding a message: %w", err)
		}
	}
	n := len(b) - 4
	if n > maxMessageSize {
		return fmt.Errorf("write lane: a message of %d bytes, more than the %d a frame holds", n, maxMessageSize)
	}
	binary.LittleEndian.PutUint32(b, uint32(n))
	_, err := l.conn.Write(b)
	l.wbuf = keptBuffer(b)
	return err
}

// laneBufferKept is the largest buffer a lane keeps from one frame to the
// next. A frame may carry megabytes inline (a WriteFiles of heap chunks);
// a lane that kept its largest buffer for good would hold memory outside
// the run's budget for as long as the session.
const laneBufferKept = 1 << 20

// frameAhead is how far beyond the bytes that arrived readFrame's buffer
// may grow.
const frameAhead = 1 << 20

// keptBuffer returns b emptied for reuse, or nil when it is too large to
// keep.
func keptBuffer(b []byte) []byte {
	if cap(b) > laneBufferKept {
		return nil
	}
	return b[:0]
}

// readFrame reads the next frame. Its payload is valid until the next call.
// A lane that ends between frames returns io.EOF; one that ends inside a
// frame, io.ErrUnexpectedEOF.
func (l *laneConn) readFrame() (kind byte, payload []byte, err error) {
	var head [4]byte
	if _, err := io.ReadFull(l.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(head[:])
	if n == 0 || n > maxMessageSize {
		return 0, nil, fmt.Errorf("write lane: a frame of %d bytes (at most %d, at least the kind byte)", n, maxMessageSize)
	}
	// The buffer grows with the bytes that arrive, not with what the
	// length claims: a peer cannot make this process allocate 256 MiB by
	// announcing a frame it never sends, only a MiB ahead of what it sent.
	// A frame of a MiB (a direct lane's 20,000 targets) then takes one
	// buffer instead of doubling into it from 64 KiB, copying each time.
	b := l.rbuf[:0]
	for len(b) < int(n) {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(int(n), max(2*cap(b), frameAhead)))
			b = grown[:copy(grown, b)]
		}
		m, err := l.r.Read(b[len(b):min(int(n), cap(b))])
		b = b[:len(b)+m]
		if err != nil && len(b) < int(n) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, fmt.Errorf("write lane: a frame of %d bytes cut short after %d: %w", n, len(b), err)
		}
	}
	l.rbuf = keptBuffer(b) // b stays valid for the caller either way
	return b[0], b[1:], nil
}

// laneClientStream is the host's end of a lane: a writeClientStream.
type laneClientStream struct {
	l      *laneConn
	ended  error       // what Recv returns once the plugin's status frame came
	closed atomic.Bool // the host closed the lane (close)
}

// Send sends a request. Unlike gRPC's, it blocks while the plugin's socket
// buffer is full; the host's watchdog and cancellation close the lane.
func (s *laneClientStream) Send(req *pb.WriteRequest) error {
	if err := s.l.writeFrame(frameMessage, req); err != nil {
		return s.broken(err)
	}
	return nil
}

func (s *laneClientStream) CloseSend() error {
	if err := s.l.writeFrame(frameEnd, nil); err != nil {
		return s.broken(err)
	}
	return nil
}

// Recv returns the next acknowledgement; io.EOF once the plugin ended the
// stream well, or the status error it ended it with.
func (s *laneClientStream) Recv() (*pb.WriteAck, error) {
	if s.ended != nil {
		return nil, s.ended
	}
	kind, payload, err := s.l.readFrame()
	if err != nil {
		return nil, s.broken(err)
	}
	switch kind {
	case frameMessage:
		ack := &pb.WriteAck{}
		if err := proto.Unmarshal(payload, ack); err != nil {
			return nil, status.Errorf(codes.Internal, "write lane: the plugin sent an acknowledgement that does not decode: %v", err)
		}
		return ack, nil
	case frameStatus:
		if s.ended = laneStatus(payload); s.ended == nil {
			s.ended = io.EOF
		}
		return nil, s.ended
	}
	return nil, status.Errorf(codes.Internal, "write lane: the plugin sent a frame of kind %q", kind)
}

// close ends the lane at once, whatever is in flight: the plugin reads that
// as a cancellation.
func (s *laneClientStream) close() {
	s.closed.Store(true)
	s.l.conn.Close()
}

// broken reports the failure of a send or receive as gRPC reports that of
// a stream: canceled when the host closed the lane, and otherwise as a
// connection that failed (laneBroken).
func (s *laneClientStream) broken(err error) error {
	if s.closed.Load() {
		return status.Error(codes.Canceled, context.Canceled.Error())
	}
	return laneBroken(err)
}

// laneBroken reports a lane that failed under the host as gRPC reports a
// connection that did, so that the host explains it the same way (the
// plugin's exit, its last words).
func laneBroken(err error) error {
	return status.Errorf(codes.Unavailable, "write lane: %v", err)
}

// laneServerStream is the plugin's end of a lane: a writeStream.
type laneServerStream struct {
	l      *laneConn
	ctx    context.Context
	cancel context.CancelFunc
}

func (s *laneServerStream) Context() context.Context { return s.ctx }

func (s *laneServerStream) Send(ack *pb.WriteAck) error { return s.l.writeFrame(frameMessage, ack) }

// Recv returns the next request, or io.EOF once the host ended its
// requests. A lane the host closed without ending them, between frames or
// inside one, cancels the stream's context, as a canceled gRPC stream
// does; a frame it cannot take ends the stream as a bad request.
func (s *laneServerStream) Recv() (*pb.WriteRequest, error) {
	kind, payload, err := s.l.readFrame()
	if err != nil {
		s.cancel()
		return nil, laneReadErr(err)
	}
	switch kind {
	case frameMessage:
		req := &pb.WriteRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "write lane: a request that does not decode: %v", err)
		}
		return req, nil
	case frameEnd:
		return nil, io.EOF
	}
	return nil, status.Errorf(codes.InvalidArgument, "write lane: a frame of kind %q", kind)
}

// laneReadErr classifies a failed read of a lane on the plugin's side: a
// lane the host closed, between frames or inside one, is a cancellation; a
// frame the plugin cannot take is a bad request.
func laneReadErr(err error) error {
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		return errLaneCanceled
	case errors.Is(err, io.ErrUnexpectedEOF):
		return status.Errorf(codes.Canceled, "%v", err)
	}
	return status.Errorf(codes.InvalidArgument, "%v", err)
}

// serveLaneOf serves a lane the host handed over, by its kind: a direct
// lane (1.7) or a write lane.
func (s sinkServer) serveLaneOf(kind byte, conn net.Conn) {
	if kind == laneDirect {
		serveDirectLane(conn, s)
		return
	}
	serveLane(conn, s)
}

// serveLane serves one lane's WriteSeries stream and ends it with its
// status frame.
func serveLane(conn net.Conn, sink sinkServer) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &laneServerStream{l: newLaneConn(conn), ctx: ctx, cancel: cancel}
	end := &spb.Status{} // code 0: the stream ended well
	if err := sink.writeSeries(s); err != nil {
		end = status.Convert(err).Proto()
	}
	// The host reads this frame only if it still listens; a canceled lane
	// has nobody left to tell.
	s.l.writeFrame(frameStatus, end)
}
