package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/sluice-ml/sluice/sdk/detached"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
	"google.golang.org/grpc"
)

// rpcClient talks to a plugin over a gRPC connection. It implements
// Instance; Launch wraps it with the process that serves it.
type rpcClient struct {
	plugin pb.PluginClient
	source pb.SourceClient
	sink   pb.SinkClient
	info   *Info
	arena  *Arena // the arena the plugin mapped, if any
	// lanes opens write lanes to the plugin (protocol 1.6), when it serves
	// them over the lane socket passed at spawn; nil otherwise.
	lanes *laneSocket
	// direct: the plugin also serves direct lanes over them (1.7).
	direct bool
	wrap   func(error) error
	// timeout bounds every wait for the plugin (see DefaultTimeout); 0
	// waits forever. onHang stops the plugin when one expires.
	timeout time.Duration
	onHang  func(*HangError)
}

func newRPCClient(ctx context.Context, conn grpc.ClientConnInterface, arena *Arena, lanes *laneSocket) (*rpcClient, error) {
	c := &rpcClient{
		plugin: pb.NewPluginClient(conn),
		source: pb.NewSourceClient(conn),
		sink:   pb.NewSinkClient(conn),
		wrap:   func(err error) error { return err },
	}
	resp, err := c.plugin.GetInfo(ctx, &pb.GetInfoRequest{HostProtocolMinor: ProtocolMinor, HostPackedStrings: true, HostPackedTensors: true, HostDigests: true})
	if err != nil {
		return nil, fmt.Errorf("asking the plugin what it serves: %w", fromStatus(err))
	}
	c.info = infoFromProto(resp)
	if c.info.Arena {
		c.arena = arena
	}
	if c.info.WriteLanes && c.info.WriteSeries {
		c.lanes = lanes
		c.direct = lanes != nil && c.info.DirectWrites
	}
	return c, nil
}

// forms says which packed forms the plugin takes in the manifests the host
// sends.
func (c *rpcClient) forms() wireForms {
	return wireForms{strings: c.info.PackedStrings, tensors: c.info.PackedTensors}
}

func (c *rpcClient) err(err error) error {
	if err == nil {
		return nil
	}
	return c.wrap(fromStatus(err))
}

func (c *rpcClient) Info() *Info { return c.info }

func (c *rpcClient) Close() error { return nil }

func (c *rpcClient) Probe(ctx context.Context, component, path string) (int, error) {
	ctx, cancel := c.unary(ctx, "Probe")
	defer cancel()
	resp, err := c.plugin.Probe(ctx, &pb.ProbeRequest{Component: component, Path: path})
	if err != nil {
		return 0, c.callErr(ctx, err)
	}
	return int(resp.Score), nil
}

func (c *rpcClient) OpenSource(ctx context.Context, component string, cfg Config) (Source, error) {
	ctx, cancel := c.unary(ctx, "opening a source")
	defer cancel()
	resp, err := c.source.Open(ctx, &pb.OpenRequest{Component: component, ConfigJson: cfg.JSON})
	if err != nil {
		return nil, c.callErr(ctx, err)
	}
	return &remoteSource{c: c, session: resp.Session}, nil
}

func (c *rpcClient) OpenSink(ctx context.Context, component string, cfg Config) (Sink, error) {
	ctx, cancel := c.unary(ctx, "opening a sink")
	defer cancel()
	resp, err := c.sink.Open(ctx, &pb.OpenRequest{Component: component, ConfigJson: cfg.JSON})
	if err != nil {
		return nil, c.callErr(ctx, err)
	}
	return &remoteSink{c: c, session: resp.Session}, nil
}

// remoteSource is a Source served by a plugin process.
type remoteSource struct {
	c       *rpcClient
	session uint64
	mu      sync.Mutex
	sizes   map[string]uint64
}

func (s *remoteSource) Describe(ctx context.Context) (*tensor.Manifest, error) {
	ctx, cancel := s.c.unary(ctx, "Describe")
	defer cancel()
	resp, err := s.c.source.Describe(ctx, &pb.SessionRequest{Session: s.session})
	if err != nil {
		return nil, s.c.callErr(ctx, err)
	}
	m, err := ManifestFromProto(resp.Manifest)
	if err != nil {
		return nil, fmt.Errorf("plugin %s sent a bad manifest: %w", s.c.info.Name, err)
	}
	s.mu.Lock()
	s.sizes = make(map[string]uint64, len(m.Tensors))
	for _, t := range m.Tensors {
		s.sizes[t.Name] = t.Size
	}
	s.mu.Unlock()
	return m, nil
}

func (s *remoteSource) Close() error {
	ctx, cancel := s.c.unary(context.Background(), "closing a source")
	defer cancel()
	_, err := s.c.source.Close(ctx, &pb.SessionRequest{Session: s.session})
	return s.c.callErr(ctx, err)
}

// Open reads a tensor through inline chunks; the host prefers OpenChunks.
func (s *remoteSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	cr, err := s.open(ctx, name, nil, 1, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	size := s.sizes[name]
	s.mu.Unlock()
	return NewChunkData(ctx, size, cr, nil), nil
}

// OpenChunks reads a tensor into the pool's arena slots when the plugin
// shares the pool's arena, and through inline chunks copied into the pool's
// slots otherwise.
func (s *remoteSource) OpenChunks(ctx context.Context, name string, pool *Pool, align, maxChunk int) (ChunkReader, error) {
	return s.open(ctx, name, pool, align, maxChunk)
}

func (s *remoteSource) open(ctx context.Context, name string, pool *Pool, align, maxChunk int) (ChunkReader, error) {
	ctx, wd := s.c.watch(ctx, func() string { return fmt.Sprintf("the next chunk of tensor %q", name) })
	cancel := wd.stop
	stream, err := s.c.source.Read(ctx)
	if err != nil {
		cancel()
		return nil, s.c.callErr(ctx, err)
	}
	useArena := pool != nil && s.c.arena != nil && pool.Arena() == s.c.arena
	if err := stream.Send(&pb.ReadRequest{Msg: &pb.ReadRequest_Start{Start: &pb.ReadStart{
		Session: s.session, Tensor: name, Arena: useArena, Align: uint64(max(align, 1)), MaxChunk: uint64(max(maxChunk, 0)),
	}}}); err != nil {
		cancel()
		return nil, s.c.err(err)
	}
	r := &remoteReader{c: s.c, stream: stream, cancel: cancel, pool: pool, arena: useArena, pending: map[uint32]*Chunk{}, ctx: ctx, wd: wd}
	if useArena {
		// Keep up to half the pool with the plugin, at least one slot.
		r.window = max(1, pool.Size()/2)
		if err := r.grant(ctx, true); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// remoteReader receives a tensor's chunks from a plugin.
type remoteReader struct {
	c       *rpcClient
	stream  pb.Source_ReadClient
	ctx     context.Context // the stream's
	wd      *watchdog
	cancel  func()
	pool    *Pool
	arena   bool
	window  int
	pending map[uint32]*Chunk
	done    bool
	ended   bool // the plugin ended the stream: no more grants
}

// grant hands free slots to the plugin until window are outstanding. It
// waits for a slot only when none is outstanding (must is true then).
func (r *remoteReader) grant(ctx context.Context, must bool) error {
	if r.ended {
		return nil
	}
	var slots []uint32
	for len(r.pending)+len(slots) < r.window {
		c, ok := r.pool.TryGet()
		if !ok {
			if !must || len(r.pending)+len(slots) > 0 {
				break
			}
			var err error
			if c, err = r.pool.Get(ctx); err != nil {
				return err
			}
		}
		_, idx, _ := c.Slot()
		r.pending[idx] = c
		slots = append(slots, idx)
	}
	if len(slots) == 0 {
		return nil
	}
	if err := r.stream.Send(&pb.ReadRequest{Msg: &pb.ReadRequest_Grant{Grant: &pb.SlotGrant{Slots: slots}}}); err != nil {
		if err == io.EOF {
			// The plugin has ended the stream, typically after sending the
			// last chunk; what it sent, and its status, arrive on Recv.
			r.ended = true
			return nil
		}
		return r.c.err(err)
	}
	return nil
}

func (r *remoteReader) NextChunk(ctx context.Context) (*Chunk, error) {
	if r.done {
		return nil, io.EOF
	}
	if r.arena {
		if err := r.grant(ctx, len(r.pending) == 0); err != nil {
			return nil, err
		}
	}
	waited := r.wd.wait()
	msg, err := r.stream.Recv()
	waited()
	r.wd.progress()
	if err == io.EOF {
		r.done = true
		return nil, io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, r.c.callErr(r.ctx, err)
	}
	if msg.Last {
		r.done = true
	}
	switch p := msg.Payload.(type) {
	case *pb.Chunk_Slot:
		c, ok := r.pending[p.Slot]
		if !ok {
			return nil, fmt.Errorf("plugin %s filled arena slot %d it was not granted", r.c.info.Name, p.Slot)
		}
		delete(r.pending, p.Slot)
		if msg.Length > uint64(cap(c.Data)) {
			c.Release()
			return nil, fmt.Errorf("plugin %s sent a chunk of %d bytes in a slot of %d", r.c.info.Name, msg.Length, cap(c.Data))
		}
		c.Data = c.Data[:msg.Length]
		c.Prefault(len(c.Data)) // the plugin filled it; we read it next
		c.Offset = msg.Offset
		return c, nil
	case *pb.Chunk_Inline:
		if uint64(len(p.Inline)) != msg.Length {
			return nil, fmt.Errorf("plugin %s sent an inline chunk of %d bytes that says %d", r.c.info.Name, len(p.Inline), msg.Length)
		}
		if r.pool == nil {
			return HeapChunk(p.Inline, msg.Offset), nil
		}
		c, err := r.pool.Get(ctx)
		if err != nil {
			return nil, err
		}
		if len(p.Inline) > cap(c.Data) {
			c.Release()
			return nil, fmt.Errorf("plugin %s sent an inline chunk larger than a slot", r.c.info.Name)
		}
		c.Prefault(len(p.Inline))
		c.Data = c.Data[:copy(c.Data[:cap(c.Data)], p.Inline)]
		c.Offset = msg.Offset
		return c, nil
	}
	return nil, fmt.Errorf("plugin %s sent a chunk without payload", r.c.info.Name)
}

func (r *remoteReader) Close() error {
	r.cancel()
	for i, c := range r.pending {
		c.Release()
		delete(r.pending, i)
	}
	return nil
}

// remoteSink is a Sink served by a plugin process.
type remoteSink struct {
	c       *rpcClient
	session uint64
	lanes   writeLanes   // idle WriteSeries streams (protocol 1.3)
	batches writeBatches // small writes waiting for a WriteFiles message
	// direct holds the sink's files and the tensors the host writes into
	// them itself (protocol 1.7), from Begin to Commit or Abort; nil when
	// the plugin offers none.
	direct *directWrites
}

func (s *remoteSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	if err := checkWireStrings(in); err != nil {
		return nil, err
	}
	ctx, cancel := s.c.unary(ctx, "Plan")
	defer cancel()
	resp, err := s.c.sink.Plan(ctx, &pb.PlanRequest{Session: s.session, Manifest: manifestToProto(in, s.c.forms())})
	if err != nil {
		return nil, s.c.callErr(ctx, err)
	}
	p, err := planFromProto(resp, in)
	if err != nil {
		return nil, fmt.Errorf("plugin %s sent a bad plan: %w", s.c.info.Name, err)
	}
	return p, nil
}

func (s *remoteSink) Begin(ctx context.Context, m *tensor.Manifest, opts BeginOptions) error {
	if err := checkWireStrings(m); err != nil {
		return err
	}
	req := &pb.BeginRequest{
		Session: s.session, Manifest: manifestToProto(m, s.c.forms()), SigningKey: opts.SigningKey, SigningKeyId: opts.SigningKeyID,
		Finalize: opts.Finalize, Digests: opts.Digests, NoFsync: opts.NoFsync, KeepCache: opts.KeepCache,
	}
	for _, i := range opts.Shards {
		if i < 1 || uint64(i) > math.MaxUint32 {
			return fmt.Errorf("sink %s: shard %d is out of range", s.c.info.Name, i)
		}
		req.Shards = append(req.Shards, uint32(i))
	}
	bctx, cancel := s.c.unary(ctx, "Begin")
	defer cancel()
	if _, err := s.c.sink.Begin(bctx, req); err != nil {
		return s.c.callErr(bctx, err)
	}
	if !s.c.direct || opts.Finalize {
		return nil
	}
	dctx, cancel := s.c.unary(ctx, "the sink's direct targets")
	defer cancel()
	d, err := s.c.openDirect(dctx, s.session, directOptions{fsyncs: !opts.NoFsync, digests: opts.Digests, keepCache: opts.KeepCache})
	if err != nil {
		return s.c.callErr(dctx, err)
	}
	s.direct = d
	return nil
}

func (s *remoteSink) Commit(ctx context.Context) ([]Artifact, error) {
	ctx, cancel := s.c.unary(ctx, "Commit")
	defer cancel()
	s.lanes.close(ctx)
	hashed := s.direct // the host computes the digests of some of its files
	if d := s.direct; d != nil {
		s.direct = nil
		defer d.close() // after the digests, once the sink renamed the files
		stop := context.AfterFunc(ctx, func() { d.conn.Close() })
		err := d.finish()
		stop()
		if err != nil {
			return nil, s.c.callErr(ctx, err)
		}
	}
	resp, err := s.c.sink.Commit(ctx, &pb.SessionRequest{Session: s.session})
	if err != nil {
		return nil, s.c.callErr(ctx, err)
	}
	var out []Artifact
	for _, a := range resp.Artifacts {
		if a.Sha256 != "" && !detached.IsHexDigest(a.Sha256) {
			return nil, fmt.Errorf("sink %s reported %q as the SHA-256 of %s, which is not 64 lowercase hex digits", s.c.info.Name, a.Sha256, a.Path)
		}
		out = append(out, Artifact{Path: a.Path, Size: a.Size, SHA256: a.Sha256})
	}
	if hashed != nil {
		// The digests the plugin handed over (protocol 1.9): the files are
		// in place now, and the host's descriptors still read them.
		for i := range out {
			if out[i].SHA256 != "" {
				continue
			}
			sha, ok, err := hashed.digestOf(out[i].Path, out[i].Size)
			if err != nil {
				return nil, fmt.Errorf("sink %s: %w", s.c.info.Name, err)
			}
			if ok {
				out[i].SHA256 = sha
			}
		}
	}
	return out, nil
}

func (s *remoteSink) Abort(ctx context.Context) error {
	ctx, cancel := s.c.unary(ctx, "Abort")
	defer cancel()
	s.lanes.close(ctx)
	if d := s.direct; d != nil {
		s.direct = nil
		d.close()
	}
	_, err := s.c.sink.Abort(ctx, &pb.SessionRequest{Session: s.session})
	return s.c.callErr(ctx, err)
}

// chunkedData is TensorData that can hand over whole chunks.
type chunkedData interface {
	NextChunk(ctx context.Context) (*Chunk, error)
}

func (s *remoteSink) Write(ctx context.Context, name string, data TensorData) error {
	if d := s.direct; d != nil {
		if t, ok := d.targets[name]; ok {
			return d.write(ctx, name, t, data)
		}
	}
	if ref, ok := data.File(); ok && ref.Length <= gatherBelow && s.GathersFileWrites() {
		return s.writeBatched(ctx, &pb.WriteStart{Session: s.session, Tensor: name, Size: data.Size(),
			File: &pb.FileRef{Path: ref.Path, Offset: ref.Offset, Length: ref.Length}}, nil)
	}
	whole, carried, back, err := s.peekWhole(ctx, data)
	if err != nil {
		return err
	}
	if whole != nil {
		return s.writeBatched(ctx, &pb.WriteStart{Session: s.session, Tensor: name, Size: data.Size(), Data: carried}, whole)
	}
	if back != nil {
		defer back.Close()
		data = NewChunkData(ctx, data.Size(), back, nil)
	}
	// The watchdog runs while the plugin holds arena slots, while a send
	// waits for it, and while the final confirmation is awaited.
	ctx, wd := s.c.watch(ctx, func() string { return fmt.Sprintf("tensor %q to be written", name) })
	defer wd.stop()
	if !s.c.info.WriteSeries {
		stream, err := s.c.sink.Write(ctx)
		if err != nil {
			return s.c.callErr(ctx, err)
		}
		return s.writeOver(ctx, wd, stream, false, name, data)
	}
	return s.lanes.use(ctx, s.c, func(stream writeClientStream) error {
		return s.writeOver(ctx, wd, stream, true, name, data)
	})
}

// writeOver writes one tensor over stream: a Write stream of its own, or
// a WriteSeries lane (series), which stays open for the next tensor.
func (s *remoteSink) writeOver(ctx context.Context, wd *watchdog, stream writeClientStream, series bool, name string, data TensorData) error {
	cancel := func() { wd.cancel(context.Canceled) }
	start := &pb.WriteStart{Session: s.session, Tensor: name, Size: data.Size()}
	if ref, ok := data.File(); ok && s.c.info.FileRefs {
		start.File = &pb.FileRef{Path: ref.Path, Offset: ref.Offset, Length: ref.Length}
	}
	waited := wd.wait()
	err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Start{Start: start}})
	waited()
	if err != nil {
		return s.waitErr(ctx, stream, err)
	}

	var mu sync.Mutex
	inFlight := map[uint32]*Chunk{}
	// receive reads acknowledgements, each of which may free a slot, up to
	// the one that confirms the tensor.
	receive := func() error {
		for {
			ack, err := stream.Recv()
			if err != nil {
				return err
			}
			wd.progress()
			if ack.HasSlot {
				mu.Lock()
				c := inFlight[ack.Slot]
				delete(inFlight, ack.Slot)
				mu.Unlock()
				if c != nil {
					wd.end()
					c.Release()
				}
			}
			if ack.Done {
				return nil
			}
		}
	}
	if start.File != nil {
		// No chunk follows, so nothing to send while waiting: the
		// confirmation is awaited here (ending ctx ends the stream).
		if !series {
			if err := stream.CloseSend(); err != nil {
				return s.c.callErr(ctx, err)
			}
		}
		defer wd.wait()()
		if err := receive(); err != nil {
			return s.recvErr(ctx, name, err)
		}
		return nil
	}
	// Acknowledgements arrive on their own goroutine while chunks are sent.
	acks := make(chan error, 1)
	go func() { acks <- receive() }()
	releaseAll := func() {
		mu.Lock()
		for k, c := range inFlight {
			wd.end()
			c.Release()
			delete(inFlight, k)
		}
		mu.Unlock()
	}

	sent, err := s.sendChunks(ctx, stream, data, &mu, inFlight, wd)
	if err == nil && series && sent != start.Size {
		// The plugin waits for the rest; only ending the lane tells it.
		err = fmt.Errorf("tensor %q: its data ended after %d of its %d bytes", name, sent, start.Size)
	}
	if err != nil {
		var se *sendError
		if errors.As(err, &se) {
			// The plugin ended the stream; its reason arrives on Recv.
			ackErr := <-acks
			releaseAll()
			if ackErr != nil && ackErr != io.EOF {
				return s.c.callErr(ctx, ackErr)
			}
			return s.c.callErr(ctx, se.err)
		}
		cancel()
		<-acks
		releaseAll()
		if he := hangOf(ctx); he != nil {
			return s.c.callErr(ctx, err)
		}
		return err
	}
	if !series {
		if err := stream.CloseSend(); err != nil {
			return s.c.callErr(ctx, err)
		}
	}
	defer wd.wait()()
	select {
	case err := <-acks:
		releaseAll()
		return s.confirmErr(ctx, name, err)
	case <-ctx.Done():
		releaseAll()
		return s.ctxErr(ctx)
	}
}

// confirmErr is the error of a write whose acknowledgements ended with err:
// none when the plugin confirmed the tensor (err is nil).
func (s *remoteSink) confirmErr(ctx context.Context, name string, err error) error {
	switch err {
	case nil:
		return nil
	case io.EOF:
		return fmt.Errorf("plugin %s closed the write of tensor %q without confirming it", s.c.info.Name, name)
	}
	return s.c.callErr(ctx, err)
}

// recvErr is the error of a write whose acknowledgements ended with err
// before the confirmation: its context's, when that ended the stream.
func (s *remoteSink) recvErr(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return s.ctxErr(ctx)
	}
	return s.confirmErr(ctx, name, err)
}

// ctxErr is the error of a write whose context ended: the plugin's hang
// when its watchdog ended it.
func (s *remoteSink) ctxErr(ctx context.Context) error {
	if hangOf(ctx) != nil {
		return s.c.callErr(ctx, ctx.Err())
	}
	return ctx.Err()
}

// sendChunks sends data's bytes as chunks and returns how many it sent.
func (s *remoteSink) sendChunks(ctx context.Context, stream writeClientStream, data TensorData, mu *sync.Mutex, inFlight map[uint32]*Chunk, wd *watchdog) (uint64, error) {
	var off uint64
	sendInline := func(b []byte) error {
		for len(b) > 0 {
			n := min(len(b), maxInline)
			last := off+uint64(n) == data.Size()
			waited := wd.wait()
			err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{
				Offset: off, Length: uint64(n), Payload: &pb.Chunk_Inline{Inline: b[:n]}, Last: last,
			}}})
			waited()
			if err != nil {
				return &sendError{err}
			}
			off += uint64(n)
			b = b[n:]
		}
		return nil
	}
	if cd, ok := data.(chunkedData); ok {
		for {
			c, err := cd.NextChunk(ctx)
			if err == io.EOF {
				return off, nil
			}
			if err != nil {
				return off, err
			}
			if len(c.Data) == 0 {
				// A plugin source gives a tensor of 0 bytes as one empty
				// chunk; a series has no chunk for it, and one sent would
				// be taken for the next tensor's start.
				c.Release()
				continue
			}
			if off+uint64(len(c.Data)) > data.Size() {
				c.Release()
				return off, fmt.Errorf("the tensor's data runs past its %d bytes", data.Size())
			}
			arena, slot, inArena := c.Slot()
			if inArena && arena == s.c.arena {
				mu.Lock()
				inFlight[slot] = c
				wd.begin() // until the plugin releases the slot
				mu.Unlock()
				last := off+uint64(len(c.Data)) == data.Size()
				if err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{
					Offset: off, Length: uint64(len(c.Data)), Payload: &pb.Chunk_Slot{Slot: slot}, Last: last,
				}}}); err != nil {
					return off, &sendError{err}
				}
				off += uint64(len(c.Data))
				continue
			}
			err = sendInline(c.Data)
			c.Release()
			if err != nil {
				return off, err
			}
		}
	}
	buf := make([]byte, maxInline)
	for {
		n, err := io.ReadFull(data, buf)
		if n > 0 {
			if err := sendInline(buf[:n]); err != nil {
				return off, err
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// sendError marks a failed Send on a stream whose receiving side is still
// being read elsewhere.
type sendError struct{ err error }

func (e *sendError) Error() string { return e.err.Error() }

// waitErr turns a failed Send into the plugin's own error: gRPC reports the
// reason on Recv, Send only says the stream ended.
func (s *remoteSink) waitErr(ctx context.Context, stream writeClientStream, sendErr error) error {
	for {
		_, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				return s.c.callErr(ctx, sendErr)
			}
			return s.c.callErr(ctx, err)
		}
	}
}
