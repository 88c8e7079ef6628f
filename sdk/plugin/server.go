package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// maxInline is the largest inline chunk: the fallback data plane.
const maxInline = 1 << 20

// maxMessageSize bounds every gRPC message both ways. Tensor bytes never
// travel in one message; metadata (a 150,000-token vocabulary, a tokenizer
// file) can take tens of MiB.
const maxMessageSize = 256 << 20

// server exposes a Plugin through the protocol's three services.
type server struct {
	pb.UnimplementedPluginServer
	impl  *Plugin
	arena *Arena
	// lanes: the host passed a lane socket, which this process serves
	// write lanes (protocol 1.6) and direct lanes (1.7) from.
	lanes bool

	// hostPackedStrings and hostPackedTensors: the host takes string
	// arrays as one block (protocol 1.5) and a manifest's tensors as one
	// block (1.8), as it said in GetInfo; hostDigests: it computes the
	// digests of the files it writes over direct lanes (1.9).
	hostPackedStrings, hostPackedTensors, hostDigests atomic.Bool

	mu      sync.Mutex
	next    atomic.Uint64
	sources map[uint64]*sourceSession
	sinks   map[uint64]Sink
}

type sourceSession struct {
	src   Source
	mu    sync.Mutex
	man   *tensor.Manifest
	index map[string]int // man's tensors by name
}

func newServer(p *Plugin, arena *Arena) *server {
	return &server{impl: p, arena: arena, sources: map[uint64]*sourceSession{}, sinks: map[uint64]Sink{}}
}

func (s *server) GetInfo(ctx context.Context, req *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	s.hostPackedStrings.Store(req.HostPackedStrings)
	s.hostPackedTensors.Store(req.HostPackedTensors)
	s.hostDigests.Store(req.HostDigests)
	info := s.impl.Info()
	info.Arena, info.WriteLanes, info.DirectWrites = s.arena != nil, s.lanes, s.lanes
	return infoToProto(info), nil
}

func (s *server) Probe(ctx context.Context, req *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	st, ok := s.impl.Source(req.Component)
	if !ok || st.Probe == nil {
		return &pb.ProbeResponse{}, nil
	}
	return &pb.ProbeResponse{Score: int32(st.Probe(req.Path))}, nil
}

func (s *server) source(id uint64) (*sourceSession, error) {
	return session(s, "source", s.sources, id)
}

func (s *server) sink(id uint64) (Sink, error) {
	return session(s, "sink", s.sinks, id)
}

// session returns the open session id of sessions, of the given kind.
func session[S any](s *server, kind string, sessions map[uint64]S, id uint64) (S, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := sessions[id]
	if !ok {
		var zero S
		return zero, fmt.Errorf("no %s session %d", kind, id)
	}
	return sess, nil
}

// abortAll aborts every open sink, for a plugin about to exit without its
// host's say.
func (s *server) abortAll(ctx context.Context) {
	s.mu.Lock()
	sinks := make([]Sink, 0, len(s.sinks))
	for id, sk := range s.sinks {
		sinks = append(sinks, sk)
		delete(s.sinks, id)
	}
	s.mu.Unlock()
	for _, sk := range sinks {
		sk.Abort(ctx)
	}
}

// sourceServer implements the Source service.
type sourceServer struct {
	pb.UnimplementedSourceServer
	*server
}

func (s sourceServer) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	return openSession(s.server, "source", req, s.impl.Source, s.sources, func(st *SourceType, cfg Config) (*sourceSession, error) {
		src, err := st.Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &sourceSession{src: src}, nil
	})
}

// openSession opens the component type req names (found by find, of the
// given kind) with open and keeps the result in sessions under a new id.
func openSession[T, S any](s *server, kind string, req *pb.OpenRequest, find func(string) (T, bool), sessions map[uint64]S, open func(T, Config) (S, error)) (*pb.OpenResponse, error) {
	t, ok := find(req.Component)
	if !ok {
		return nil, toStatus(fmt.Errorf("plugin %s has no %s %q", s.impl.Name, kind, req.Component))
	}
	sess, err := open(t, Config{JSON: req.ConfigJson})
	if err != nil {
		return nil, toStatus(err)
	}
	id := s.next.Add(1)
	s.mu.Lock()
	sessions[id] = sess
	s.mu.Unlock()
	return &pb.OpenResponse{Session: id}, nil
}

func (ss *sourceSession) manifest(ctx context.Context) (*tensor.Manifest, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.man == nil {
		m, err := ss.src.Describe(ctx)
		if err != nil {
			return nil, err
		}
		ss.man, ss.index = m, m.Index()
	}
	return ss.man, nil
}

// tensor returns the described tensor called name; a read of each of a
// model's tensors must not scan the list each time.
func (ss *sourceSession) tensor(ctx context.Context, name string) (*tensor.TensorInfo, bool, error) {
	m, err := ss.manifest(ctx)
	if err != nil {
		return nil, false, err
	}
	i, ok := ss.index[name] // set with man, under the lock manifest took
	if !ok {
		return nil, false, nil
	}
	return &m.Tensors[i], true, nil
}

func (s sourceServer) Describe(ctx context.Context, req *pb.SessionRequest) (*pb.DescribeResponse, error) {
	ss, err := s.source(req.Session)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := ss.manifest(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := checkWireStrings(m); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DescribeResponse{Manifest: manifestToProto(m, wireForms{strings: s.hostPackedStrings.Load(), tensors: s.hostPackedTensors.Load()})}, nil
}

func (s sourceServer) Close(ctx context.Context, req *pb.SessionRequest) (*pb.Empty, error) {
	s.mu.Lock()
	ss, ok := s.sources[req.Session]
	delete(s.sources, req.Session)
	s.mu.Unlock()
	if !ok {
		return &pb.Empty{}, nil
	}
	return &pb.Empty{}, toStatus(ss.src.Close())
}

func (s sourceServer) Read(stream pb.Source_ReadServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return toStatus(fmt.Errorf("read stream must begin with a start message"))
	}
	ss, err := s.source(start.Session)
	if err != nil {
		return toStatus(err)
	}
	info, ok, err := ss.tensor(ctx, start.Tensor)
	if err != nil {
		return toStatus(err)
	}
	if !ok {
		return toStatus(&InputError{Tensor: start.Tensor, Msg: "no such tensor"})
	}
	r, err := ss.src.Open(ctx, start.Tensor)
	if err != nil {
		return toStatus(err)
	}
	defer r.Close()
	align := int(start.Align)
	if align < 1 {
		align = 1
	}
	if start.Arena && s.arena != nil {
		return toStatus(s.readIntoSlots(stream, r, info, chunkLen(limit(s.arena.SlotSize(), int(start.MaxChunk)), align)))
	}
	return toStatus(readInline(stream, r, info, chunkLen(limit(maxInline, int(start.MaxChunk)), align)))
}

func (s sourceServer) readIntoSlots(stream pb.Source_ReadServer, r io.Reader, info *tensor.TensorInfo, n int) error {
	grants := make(chan uint32, s.arena.Slots())
	recvErr := make(chan error, 1)
	go func() {
		defer close(grants)
		for {
			msg, err := stream.Recv()
			if err != nil {
				if err != io.EOF {
					recvErr <- err
				}
				return
			}
			for _, slot := range msg.GetGrant().GetSlots() {
				grants <- slot
			}
		}
	}()
	var off uint64
	for off < info.Size || info.Size == 0 {
		slot, ok := <-grants
		if !ok {
			select {
			case err := <-recvErr:
				return err
			default:
				return nil // the host stopped reading
			}
		}
		mem, err := s.arena.Slot(slot)
		if err != nil {
			return err
		}
		length := uint64(n)
		if length > info.Size-off {
			length = info.Size - off
		}
		s.arena.prefault(slot, int(length))
		if _, err := io.ReadFull(r, mem[:length]); err != nil {
			return readErr(info, off, err)
		}
		last := off+length == info.Size
		if err := stream.Send(&pb.Chunk{Offset: off, Length: length, Payload: &pb.Chunk_Slot{Slot: slot}, Last: last}); err != nil {
			return err
		}
		off += length
		if info.Size == 0 {
			break
		}
	}
	return nil
}

func readInline(stream pb.Source_ReadServer, r io.Reader, info *tensor.TensorInfo, n int) error {
	buf := make([]byte, n)
	var off uint64
	for off < info.Size || info.Size == 0 {
		length := uint64(n)
		if length > info.Size-off {
			length = info.Size - off
		}
		if _, err := io.ReadFull(r, buf[:length]); err != nil {
			return readErr(info, off, err)
		}
		last := off+length == info.Size
		if err := stream.Send(&pb.Chunk{Offset: off, Length: length, Payload: &pb.Chunk_Inline{Inline: buf[:length]}, Last: last}); err != nil {
			return err
		}
		off += length
		if info.Size == 0 {
			break
		}
	}
	return nil
}

func readErr(info *tensor.TensorInfo, off uint64, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &InputError{Tensor: info.Name, Msg: fmt.Sprintf("data ended after %d of %d bytes", off, info.Size)}
	}
	return err
}

// sinkServer implements the Sink service.
type sinkServer struct {
	pb.UnimplementedSinkServer
	*server
}

func (s sinkServer) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	return openSession(s.server, "sink", req, s.impl.Sink, s.sinks, func(st *SinkType, cfg Config) (Sink, error) {
		return st.Open(ctx, cfg)
	})
}

func (s sinkServer) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	sk, err := s.sink(req.Session)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := ManifestFromProto(req.Manifest)
	if err != nil {
		return nil, toStatus(err)
	}
	p, err := sk.Plan(ctx, m)
	if err != nil {
		return nil, toStatus(err)
	}
	return planToProto(p, m, s.hostPackedTensors.Load()), nil
}

func (s sinkServer) Begin(ctx context.Context, req *pb.BeginRequest) (*pb.Empty, error) {
	sk, err := s.sink(req.Session)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := ManifestFromProto(req.Manifest)
	if err != nil {
		return nil, toStatus(err)
	}
	opts := BeginOptions{SigningKey: req.SigningKey, SigningKeyID: req.SigningKeyId, Finalize: req.Finalize, Digests: req.Digests, NoFsync: req.NoFsync, KeepCache: req.KeepCache}
	for _, i := range req.Shards {
		opts.Shards = append(opts.Shards, int(i))
	}
	return &pb.Empty{}, toStatus(sk.Begin(ctx, m, opts))
}

func (s sinkServer) Commit(ctx context.Context, req *pb.SessionRequest) (*pb.CommitResponse, error) {
	sk, err := s.sink(req.Session)
	if err != nil {
		return nil, toStatus(err)
	}
	arts, err := sk.Commit(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &pb.CommitResponse{}
	for _, a := range arts {
		out.Artifacts = append(out.Artifacts, &pb.Artifact{Path: a.Path, Size: a.Size, Sha256: a.SHA256})
	}
	return out, nil
}

func (s sinkServer) Abort(ctx context.Context, req *pb.SessionRequest) (*pb.Empty, error) {
	sk, err := s.sink(req.Session)
	if err != nil {
		return &pb.Empty{}, nil
	}
	return &pb.Empty{}, toStatus(sk.Abort(ctx))
}

func (s sinkServer) Write(stream pb.Sink_WriteServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return s.writeTensor(stream, first, false)
}

// WriteSeries serves the writes of tensor after tensor over one stream
// (protocol 1.3): each is what Write does with one, its end told by its
// size rather than by the end of the stream.
func (s sinkServer) WriteSeries(stream pb.Sink_WriteSeriesServer) error {
	return s.writeSeries(stream)
}

// writeSeries serves a WriteSeries stream, over gRPC or a write lane.
func (s sinkServer) writeSeries(stream writeStream) error {
	for {
		first, err := stream.Recv()
		if err == io.EOF {
			return nil // the host closed the series between tensors
		}
		if err != nil {
			return err
		}
		if files := first.GetFiles(); files != nil {
			err = s.writeFiles(stream, files)
		} else {
			err = s.writeTensor(stream, first, true)
		}
		if err != nil {
			return err
		}
	}
}

// writeFiles writes a WriteFiles' tensors in order and confirms them all in
// one acknowledgement; when one fails, it says how many before it were
// written, and its error ends the stream.
func (s sinkServer) writeFiles(stream writeStream, files *pb.WriteFiles) error {
	ctx := stream.Context()
	sizes := fileSizes{} // a message's tensors mostly lie in one file
	for i, start := range files.Tensors {
		var err error
		if start.Data != nil {
			err = s.writeWhole(ctx, start)
		} else {
			err = s.writeFile(ctx, start, sizes)
		}
		if err != nil {
			if serr := stream.Send(&pb.WriteAck{Written: uint32(i)}); serr != nil {
				return serr
			}
			return toStatus(err)
		}
	}
	return stream.Send(&pb.WriteAck{Done: true, Written: uint32(len(files.Tensors))})
}

// writeFile writes a tensor whose start carries a file reference, checked
// against the file's size (taken from sizes when it has it; sizes may be
// nil).
func (s sinkServer) writeFile(ctx context.Context, start *pb.WriteStart, sizes fileSizes) error {
	f := start.File
	if f == nil {
		return fmt.Errorf("tensor %q: a write of files without a file reference or data", start.Tensor)
	}
	sk, err := s.sink(start.Session)
	if err != nil {
		return err
	}
	if f.Length != start.Size {
		return fmt.Errorf("tensor %q: file reference of %d bytes for a tensor of %d", start.Tensor, f.Length, start.Size)
	}
	if err := sizes.check(f); err != nil {
		return err
	}
	return sk.Write(ctx, start.Tensor, FileData(tensor.FileRef{Path: f.Path, Offset: f.Offset, Length: f.Length}))
}

// writeWhole writes a tensor of a WriteFiles whose start carries all of its
// bytes in one chunk (protocol 1.4): in an arena slot, from its slot_offset
// on, or inline. A slot is the host's again once the tensor is counted as
// written, so no acknowledgement of its own is sent.
func (s sinkServer) writeWhole(ctx context.Context, start *pb.WriteStart) error {
	c := start.Data
	if c.Offset != 0 || c.Length != start.Size || !c.Last || start.File != nil {
		return fmt.Errorf("tensor %q of %d bytes: its data must be one chunk of it all, got [%d, +%d) marked last = %v beside a file reference = %v",
			start.Tensor, start.Size, c.Offset, c.Length, c.Last, start.File != nil)
	}
	var mem []byte
	switch p := c.Payload.(type) {
	case *pb.Chunk_Inline:
		if uint64(len(p.Inline)) != c.Length || c.SlotOffset != 0 {
			return fmt.Errorf("tensor %q: its inline data holds %d bytes, says %d (slot offset %d)", start.Tensor, len(p.Inline), c.Length, c.SlotOffset)
		}
		mem = p.Inline
	case *pb.Chunk_Slot:
		if s.arena == nil {
			return fmt.Errorf("tensor %q: data in an arena slot, but no arena was mapped", start.Tensor)
		}
		slot, err := s.arena.Slot(p.Slot)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", start.Tensor, err)
		}
		end, ok := addU64(c.SlotOffset, c.Length)
		if !ok || end > uint64(len(slot)) {
			return fmt.Errorf("tensor %q: %d bytes at byte %d of a slot of %d", start.Tensor, c.Length, c.SlotOffset, len(slot))
		}
		s.arena.prefault(p.Slot, int(end))
		mem = slot[c.SlotOffset:]
	default:
		return fmt.Errorf("tensor %q: data without payload", start.Tensor)
	}
	sk, err := s.sink(start.Session)
	if err != nil {
		return err
	}
	// A sink may hold the chunk past its Write (Retain); the slot is the
	// host's again only once it is released.
	released := make(chan struct{})
	data := NewChunkData(ctx, start.Size, SingleChunk(NewChunk(mem[:c.Length], 0, func() { close(released) })), nil)
	werr := sk.Write(ctx, start.Tensor, data)
	data.Close()
	select {
	case <-released:
	case <-ctx.Done():
		return ctx.Err()
	}
	if werr != nil {
		return werr
	}
	if data.Consumed() != start.Size {
		return fmt.Errorf("sink %s consumed %d of the %d bytes of tensor %q", s.impl.Name, data.Consumed(), start.Size, start.Tensor)
	}
	return nil
}

// writeStream is the plugin's end of a Write or WriteSeries stream.
type writeStream interface {
	Context() context.Context
	Recv() (*pb.WriteRequest, error)
	Send(*pb.WriteAck) error
}

// writeTensor writes the tensor whose start is first and acknowledges it
// with done. In a series (bounded) the tensor's chunks end with the one
// marked last, or with none for a tensor of 0 bytes; in a Write, also with
// the end of the stream.
func (s sinkServer) writeTensor(stream writeStream, first *pb.WriteRequest, bounded bool) error {
	ctx := stream.Context()
	start := first.GetStart()
	if start == nil {
		return toStatus(fmt.Errorf("write stream must begin with a start message"))
	}
	if start.File != nil {
		if err := s.writeFile(ctx, start, nil); err != nil {
			return toStatus(err)
		}
		return stream.Send(&pb.WriteAck{Done: true})
	}
	sk, err := s.sink(start.Session)
	if err != nil {
		return toStatus(err)
	}
	var sendMu sync.Mutex
	send := func(a *pb.WriteAck) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(a)
	}
	cr := &streamChunks{stream: stream, arena: s.arena, send: send}
	if bounded {
		cr.size, cr.done = start.Size, start.Size == 0
	}
	data := NewChunkData(ctx, start.Size, cr, nil)
	werr := sk.Write(ctx, start.Tensor, data)
	data.Close()
	if werr != nil {
		return toStatus(werr)
	}
	if data.Consumed() != start.Size {
		return toStatus(fmt.Errorf("sink %s consumed %d of the %d bytes of tensor %q", s.impl.Name, data.Consumed(), start.Size, start.Tensor))
	}
	return send(&pb.WriteAck{Done: true})
}

// fileSizes holds the sizes of the files the references of one message
// name, so that a message of many tensors of one file stats it once.
type fileSizes map[string]int64

// check verifies that a file reference lies within its file, whose size it
// reads unless fs holds it (a nil fs holds none).
func (fs fileSizes) check(f *pb.FileRef) error {
	size, ok := fs[f.Path]
	if !ok {
		st, err := os.Stat(f.Path)
		if err != nil {
			return fmt.Errorf("file reference: %w", err)
		}
		size = st.Size()
		if fs != nil {
			fs[f.Path] = size
		}
	}
	end, ok := addU64(f.Offset, f.Length)
	if !ok || end > uint64(size) {
		return fmt.Errorf("file reference [%d, +%d) lies past the end of %s (%d bytes)", f.Offset, f.Length, f.Path, size)
	}
	return nil
}

func addU64(a, b uint64) (uint64, bool) {
	s := a + b
	return s, s >= a
}

// streamChunks reads a tensor's chunks from a Write or WriteSeries stream
// as a ChunkReader; releasing an arena chunk acknowledges its slot to the
// host.
type streamChunks struct {
	stream writeStream
	arena  *Arena
	send   func(*pb.WriteAck) error
	off    uint64
	done   bool
	// size, in a series, bounds the tensor: a chunk past it is an error,
	// not the next tensor's.
	size uint64
}

func (s *streamChunks) NextChunk(ctx context.Context) (*Chunk, error) {
	if s.done {
		return nil, io.EOF
	}
	msg, err := s.stream.Recv()
	if err == io.EOF {
		s.done = true
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	c := msg.GetChunk()
	if c == nil {
		return nil, fmt.Errorf("write stream: expected a chunk")
	}
	if c.SlotOffset != 0 {
		return nil, fmt.Errorf("write stream: a chunk at byte %d of its slot (only a WriteFiles tensor's data may be)", c.SlotOffset)
	}
	if c.Offset != s.off {
		return nil, fmt.Errorf("write stream: chunk at offset %d, expected %d", c.Offset, s.off)
	}
	if s.size > 0 && (c.Length > s.size-s.off || c.Last != (s.off+c.Length == s.size)) {
		return nil, fmt.Errorf("write stream: chunk [%d, +%d) of a tensor of %d bytes marked last = %v", c.Offset, c.Length, s.size, c.Last)
	}
	s.off += c.Length
	if c.Last {
		s.done = true
	}
	switch p := c.Payload.(type) {
	case *pb.Chunk_Inline:
		if uint64(len(p.Inline)) != c.Length {
			return nil, fmt.Errorf("write stream: inline chunk holds %d bytes, says %d", len(p.Inline), c.Length)
		}
		return NewChunk(p.Inline, c.Offset, nil), nil
	case *pb.Chunk_Slot:
		if s.arena == nil {
			return nil, fmt.Errorf("write stream: arena chunk but no arena was mapped")
		}
		mem, err := s.arena.Slot(p.Slot)
		if err != nil {
			return nil, err
		}
		if c.Length > uint64(len(mem)) {
			return nil, fmt.Errorf("write stream: chunk of %d bytes in a slot of %d", c.Length, len(mem))
		}
		s.arena.prefault(p.Slot, int(c.Length))
		slot := p.Slot
		return NewChunk(mem[:c.Length], c.Offset, func() { s.send(&pb.WriteAck{Slot: slot, HasSlot: true}) }), nil
	}
	return nil, fmt.Errorf("write stream: chunk without payload")
}

func (s *streamChunks) Close() error { return nil }
