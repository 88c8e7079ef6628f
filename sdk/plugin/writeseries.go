package plugin

import (
	"context"
	"fmt"
	"io"
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
	stream writeClientStream
	cancel func()
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
	if c.lanes != nil {
		ls, err := c.lanes.open()
		if err != nil {
			return nil, err
		}
		return &writeLane{stream: ls, cancel: ls.close}, nil
	}
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

// A sink session's writes of small tensors go out several to a WriteFiles
// message (protocol 1.3): tensors whose bytes lie in files, and, to a
// plugin that takes them (1.4), tensors the host made whose bytes lie whole
// in one chunk (a slot, a piece of one, or inline). They are gathered the
// way a group commit gathers transactions: a write that finds fewer than
// maxBatches messages in flight sends one at once, of itself and of every
// write waiting, and goes on sending while writes wait; the others wait for
// it. No write waits for a
// timer, and when writes come one at a time each goes alone. maxBatch
// bounds a message, and maxBatchInline the bytes it carries inline.
//
// Only tensors of at most gatherBelow bytes are gathered: the plugin writes
// a message's tensors one after another, and copies of larger tensors gain
// from going on at once (into the files of different shards) more than they
// lose to a message each.
const (
	maxBatches     = 2
	maxBatch       = 256
	gatherBelow    = 1 << 20
	maxBatchInline = 8 << 20
)

// GatherInlineBelow is the size up to which a converted tensor whose bytes
// lie whole in one chunk outside the arena (on the heap) is gathered too,
// its bytes inline in the message.
const GatherInlineBelow = 256 << 10

// writeBatches holds the writes waiting for a WriteFiles message.
type writeBatches struct {
	mu      sync.Mutex
	queue   []*batchedWrite
	senders int // writes sending messages
}

// batchedWrite is one tensor's write waiting in writeBatches.
type batchedWrite struct {
	start *pb.WriteStart
	// chunk holds the tensor's bytes when start.Data carries them (in its
	// slot, or inline); the write releases it once the message's outcome is
	// known.
	chunk *Chunk
	done  chan error // the tensor's outcome, sent once
}

// add queues w and reports whether the caller is to send messages.
func (b *writeBatches) add(w *batchedWrite) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, w)
	if b.senders < maxBatches {
		b.senders++
		return true
	}
	return false
}

// next takes the writes for a message, or, when none waits, ends the
// caller's turn as a sender and returns nil.
func (b *writeBatches) next() []*batchedWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.senders--
		b.queue = nil
		return nil
	}
	n, inline := 0, 0
	for n < len(b.queue) && n < maxBatch {
		if d := b.queue[n].start.Data.GetInline(); d != nil {
			if n > 0 && inline+len(d) > maxBatchInline {
				break
			}
			inline += len(d)
		}
		n++
	}
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	return batch
}

// requeue puts writes a failed message did not reach back at the front.
func (b *writeBatches) requeue(ws []*batchedWrite) {
	b.mu.Lock()
	b.queue = append(ws[:len(ws):len(ws)], b.queue...)
	b.mu.Unlock()
}

// GathersFileWrites reports that the sink sends writes of file references
// of small tensors in WriteFiles messages: the plugin serves them.
func (s *remoteSink) GathersFileWrites() bool {
	return s.direct == nil && s.c.info.WriteSeries && s.c.info.FileRefs
}

// GathersDataWrites reports that the sink sends writes of small tensors
// whose bytes lie whole in one chunk in WriteFiles messages (protocol 1.4):
// the plugin takes them.
func (s *remoteSink) GathersDataWrites() bool {
	return s.direct == nil && s.c.info.WriteSeries && s.c.info.WriteData
}

// dataOf returns how a WriteStart carries c, a tensor's whole bytes: the
// slot (and offset, for a piece of a shared one) it lies in, when the plugin
// mapped the arena, or inline, when it is small enough; nil when neither.
func (s *remoteSink) dataOf(c *Chunk) *pb.Chunk {
	n := uint64(len(c.Data))
	if arena, slot, inArena := c.Slot(); inArena && arena == s.c.arena && s.c.info.Arena {
		return &pb.Chunk{Length: n, Payload: &pb.Chunk_Slot{Slot: slot}, Last: true}
	}
	if arena, slot, off, cut := c.Piece(); cut && arena == s.c.arena && s.c.info.Arena {
		return &pb.Chunk{Length: n, Payload: &pb.Chunk_Slot{Slot: slot}, SlotOffset: uint64(off), Last: true}
	}
	if n <= GatherInlineBelow {
		return &pb.Chunk{Length: n, Payload: &pb.Chunk_Inline{Inline: c.Data}, Last: true}
	}
	return nil
}

// peekWhole takes the first chunk of data, a tensor of at most gatherBelow
// bytes, when the plugin would take the tensor whole in a WriteFiles
// message. When that chunk holds all of the tensor's bytes and a WriteStart
// can carry them (dataOf), it is returned with that carriage; otherwise it
// comes back in a putBack ahead of the rest of data, which the caller
// writes instead and closes after the write.
func (s *remoteSink) peekWhole(ctx context.Context, data TensorData) (*Chunk, *pb.Chunk, *putBack, error) {
	cd, ok := data.(chunkedData)
	if !ok || data.Size() == 0 || data.Size() > gatherBelow || !s.GathersDataWrites() {
		return nil, nil, nil, nil
	}
	c, err := cd.NextChunk(ctx)
	if err == io.EOF {
		return nil, nil, nil, nil // it ends early; the write says so
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if uint64(len(c.Data)) == data.Size() {
		if d := s.dataOf(c); d != nil {
			return c, d, nil, nil
		}
	}
	return nil, nil, &putBack{first: c, rest: cd}, nil
}

// SingleChunk returns a ChunkReader that yields c, then io.EOF; closing it
// before c was taken releases c.
func SingleChunk(c *Chunk) ChunkReader { return &putBack{first: c} }

// putBack yields a chunk already taken from rest, then rest's (none when
// rest is nil).
type putBack struct {
	first *Chunk
	rest  chunkedData
}

func (p *putBack) NextChunk(ctx context.Context) (*Chunk, error) {
	if c := p.first; c != nil {
		p.first = nil
		return c, nil
	}
	if p.rest == nil {
		return nil, io.EOF
	}
	return p.rest.NextChunk(ctx)
}

// Close releases the first chunk when it was not handed out; rest is its
// owner's to close.
func (p *putBack) Close() error {
	if p.first != nil {
		p.first.Release()
		p.first = nil
	}
	return nil
}

// writeBatched writes a tensor whose start carries a file reference, or
// whose bytes chunk holds whole, in a WriteFiles message with whatever
// other such writes wait. The write releases chunk.
func (s *remoteSink) writeBatched(ctx context.Context, start *pb.WriteStart, chunk *Chunk) error {
	w := &batchedWrite{start: start, chunk: chunk, done: make(chan error, 1)}
	if s.batches.add(w) {
		for batch := s.batches.next(); batch != nil; batch = s.batches.next() {
			s.sendBatch(ctx, batch)
		}
	}
	select {
	case err := <-w.done:
		if chunk != nil {
			chunk.Release()
		}
		return err
	case <-ctx.Done():
		// The run is ending; a message in flight may still write the
		// tensor, into a sink about to be aborted. Its slot stays taken
		// until the message's outcome is known.
		if chunk != nil {
			go func() {
				<-w.done
				chunk.Release()
			}()
		}
		return ctx.Err()
	}
}

// sendBatch writes batch in one WriteFiles message and tells each write
// its outcome. When a tensor fails, those before it were written; the
// tensor gets the error, and the writes after it wait for another message
// (their own outcome is theirs to report), unless the plugin hung or the
// run ended, which ends them all.
func (s *remoteSink) sendBatch(ctx context.Context, batch []*batchedWrite) {
	ctx, wd := s.c.watch(ctx, func() string {
		if len(batch) == 1 {
			return fmt.Sprintf("tensor %q to be written", batch[0].start.Tensor)
		}
		return fmt.Sprintf("tensors %q to %q (%d) to be written", batch[0].start.Tensor, batch[len(batch)-1].start.Tensor, len(batch))
	})
	defer wd.stop()
	written, err := 0, ctx.Err()
	if err == nil {
		written, err = s.sendBatchOver(ctx, wd, batch)
	}
	for _, w := range batch[:written] {
		w.done <- nil
	}
	if err == nil || written == len(batch) {
		return
	}
	batch[written].done <- err
	rest := batch[written+1:]
	if ctx.Err() == nil {
		s.batches.requeue(rest)
		return
	}
	for _, w := range rest {
		w.done <- err
	}
}

// sendBatchOver sends batch over a lane and returns how many of its tensors
// the plugin wrote.
func (s *remoteSink) sendBatchOver(ctx context.Context, wd *watchdog, batch []*batchedWrite) (int, error) {
	written := 0
	err := s.lanes.use(ctx, s.c, func(stream writeClientStream) error {
		var err error
		written, err = s.exchangeBatch(ctx, wd, stream, batch)
		return err
	})
	return written, err
}

func (s *remoteSink) exchangeBatch(ctx context.Context, wd *watchdog, stream writeClientStream, batch []*batchedWrite) (int, error) {
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
