package plugin

import (
	"context"
	"fmt"
	"sync"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// writeClientStream is the host's end of a Write or a WriteSeries stream.
type writeClientStream interface {
	Send(*pb.WriteRequest) error
	Recv() (*pb.WriteAck, error)
	CloseSend() error
}

// writeLane is one WriteSeries stream (protocol 1.3). It carries one
// tensor's write at a time and then the next one's, so that a model of tens
// of thousands of tensors costs the two processes a message per tensor
// rather than a stream.
type writeLane struct {
	stream pb.Sink_WriteSeriesClient
	cancel context.CancelFunc
}

// writeLanes holds a sink session's idle lanes. A write takes one, or opens
// one when all are busy, and gives it back when its tensor is confirmed;
// a lane whose write failed is canceled instead, as its stream may be in
// the middle of a tensor. There are never more lanes than writes at once.
type writeLanes struct {
	mu   sync.Mutex
	idle []*writeLane
}

// take returns an idle lane, or a new one.
func (l *writeLanes) take(c *rpcClient) (*writeLane, error) {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		lane := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return lane, nil
	}
	l.mu.Unlock()
	// The stream lives until the session ends or a write on it fails: its
	// context is not any one write's.
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.sink.WriteSeries(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &writeLane{stream: stream, cancel: cancel}, nil
}

// put gives back a lane whose last tensor the plugin confirmed.
func (l *writeLanes) put(lane *writeLane) {
	l.mu.Lock()
	l.idle = append(l.idle, lane)
	l.mu.Unlock()
}

// use runs f over a lane: an idle one, or a new one. The lane outlives the
// write, so ending ctx (a watchdog, a failed run) ends the lane's stream
// too; the lane goes back to the idle ones only when f succeeded and ctx
// did not end, as otherwise its stream may be in the middle of a tensor.
func (l *writeLanes) use(ctx context.Context, c *rpcClient, f func(writeClientStream) error) error {
	lane, err := l.take(c)
	if err != nil {
		return c.callErr(ctx, err)
	}
	stop := context.AfterFunc(ctx, lane.cancel)
	err = f(lane.stream)
	if !stop() || err != nil {
		lane.cancel()
		return err
	}
	l.put(lane)
	return nil
}

// close ends every idle lane: the host closes its side, and the plugin
// ends the stream once it has read that. Ending ctx cancels the lanes still
// waiting for the plugin.
func (l *writeLanes) close(ctx context.Context) {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	for _, lane := range idle {
		stop := context.AfterFunc(ctx, lane.cancel)
		if lane.stream.CloseSend() == nil {
			for {
				if _, err := lane.stream.Recv(); err != nil {
					break // io.EOF once the plugin's handler returned
				}
			}
		}
		stop()
		lane.cancel()
	}
}

// A sink session's writes of tensors whose bytes lie in files go out in
// WriteFiles messages (protocol 1.3), gathered the way a group commit
// gathers transactions: a write that finds fewer than maxFileBatches
// messages in flight sends one at once, of itself and of every write
// waiting, and goes on sending while writes wait; the others wait for it.
// No write waits for a timer, and when writes come one at a time each goes
// alone. maxFileBatch bounds a message (a start is a name and a path).
//
// Only tensors of at most gatherBelow bytes are gathered: the plugin writes
// a message's tensors one after another, and copies of larger tensors gain
// from going on at once (into the files of different shards) more than they
// lose to a message each.
const (
	maxFileBatches = 2
	maxFileBatch   = 256
	gatherBelow    = 1 << 20
)

// fileBatches holds the writes waiting for a WriteFiles message.
type fileBatches struct {
	mu      sync.Mutex
	queue   []*fileWrite
	senders int // writes sending messages
}

// fileWrite is one tensor's write waiting in fileBatches.
type fileWrite struct {
	start *pb.WriteStart
	done  chan error // the tensor's outcome, sent once
}

// add queues w and reports whether the caller is to send messages.
func (b *fileBatches) add(w *fileWrite) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, w)
	if b.senders < maxFileBatches {
		b.senders++
		return true
	}
	return false
}

// next takes the writes for a message, or, when none waits, ends the
// caller's turn as a sender and returns nil.
func (b *fileBatches) next() []*fileWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.senders--
		b.queue = nil
		return nil
	}
	n := min(len(b.queue), maxFileBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	return batch
}

// requeue puts writes a failed message did not reach back at the front.
func (b *fileBatches) requeue(ws []*fileWrite) {
	b.mu.Lock()
	b.queue = append(ws[:len(ws):len(ws)], b.queue...)
	b.mu.Unlock()
}

// GathersFileWrites reports that the sink sends writes of file references
// of small tensors in WriteFiles messages: the plugin serves them.
func (s *remoteSink) GathersFileWrites() bool { return s.c.info.WriteSeries && s.c.info.FileRefs }

// writeFile writes a tensor whose start carries a file reference, in a
// WriteFiles message with whatever other such writes wait.
func (s *remoteSink) writeFile(ctx context.Context, start *pb.WriteStart) error {
	w := &fileWrite{start: start, done: make(chan error, 1)}
	if s.files.add(w) {
		for batch := s.files.next(); batch != nil; batch = s.files.next() {
			s.sendFileBatch(ctx, batch)
		}
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		// The run is ending; a message in flight may still write the
		// tensor, into a sink about to be aborted.
		return ctx.Err()
	}
}

// sendFileBatch writes batch in one WriteFiles message and tells each write
// its outcome. When a tensor fails, those before it were written; the
// tensor gets the error, and the writes after it wait for another message
// (their own outcome is theirs to report), unless the plugin hung or the
// run ended, which ends them all.
func (s *remoteSink) sendFileBatch(ctx context.Context, batch []*fileWrite) {
	ctx, wd := s.c.watch(ctx, func() string {
		if len(batch) == 1 {
			return fmt.Sprintf("tensor %q to be written", batch[0].start.Tensor)
		}
		return fmt.Sprintf("tensors %q to %q (%d) to be written", batch[0].start.Tensor, batch[len(batch)-1].start.Tensor, len(batch))
	})
	defer wd.stop()
	written, err := s.sendFiles(ctx, wd, batch)
	for _, w := range batch[:written] {
		w.done <- nil
	}
	if err == nil || written == len(batch) {
		return
	}
	batch[written].done <- err
	rest := batch[written+1:]
	if ctx.Err() == nil {
		s.files.requeue(rest)
		return
	}
	for _, w := range rest {
		w.done <- err
	}
}

// sendFiles sends batch over a lane and returns how many of its tensors the
// plugin wrote.
func (s *remoteSink) sendFiles(ctx context.Context, wd *watchdog, batch []*fileWrite) (int, error) {
	written := 0
	err := s.lanes.use(ctx, s.c, func(stream writeClientStream) error {
		var err error
		written, err = s.exchangeFiles(ctx, wd, stream, batch)
		return err
	})
	return written, err
}

func (s *remoteSink) exchangeFiles(ctx context.Context, wd *watchdog, stream writeClientStream, batch []*fileWrite) (int, error) {
	files := &pb.WriteFiles{Tensors: make([]*pb.WriteStart, len(batch))}
	for i, w := range batch {
		files.Tensors[i] = w.start
	}
	defer wd.wait()()
	if err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Files{Files: files}}); err != nil {
		return 0, s.waitErr(ctx, stream, err)
	}
	written := 0
	for {
		ack, err := stream.Recv()
		if err != nil {
			return written, s.recvErr(ctx, batch[min(written, len(batch)-1)].start.Tensor, err)
		}
		wd.progress()
		written = min(int(ack.Written), len(batch))
		if ack.Done {
			if written < len(batch) {
				return written, fmt.Errorf("plugin %s confirmed %d of the %d tensors of a message", s.c.info.Name, written, len(batch))
			}
			return written, nil
		}
	}
}
