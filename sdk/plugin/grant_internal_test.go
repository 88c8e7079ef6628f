package plugin

import (
	"bytes"
	"context"
	"io"
	"testing"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"google.golang.org/grpc"
)

// endedReadStream is a read stream whose plugin has already sent a tensor's
// only chunk and ended the stream: a Send fails with io.EOF, as gRPC's does,
// and Recv still yields the chunk, then io.EOF.
type endedReadStream struct {
	grpc.ClientStream
	chunks []*pb.Chunk
}

func (s *endedReadStream) Send(*pb.ReadRequest) error { return io.EOF }

func (s *endedReadStream) Recv() (*pb.Chunk, error) {
	if len(s.chunks) == 0 {
		return nil, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

// TestGrantAfterThePluginEndedTheStream: a grant of more slots that races
// with the plugin's end of the stream must not end the read early; the chunk
// the plugin sent is still received. (The race lost whole tensors: the
// reader reported io.EOF, an empty tensor, before reading the chunk.)
func TestGrantAfterThePluginEndedTheStream(t *testing.T) {
	ctx := context.Background()
	arena := newTestArena(t, 4, 1<<16)
	pool, err := arena.Reserve(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// One slot is already with the plugin, filled with the tensor.
	granted, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, slot, _ := granted.Slot()
	want := []byte("the whole tensor")
	copy(granted.Data[:cap(granted.Data)], want)

	c := &rpcClient{info: &Info{Name: "test"}, wrap: func(err error) error { return err }}
	wctx, wd := c.watch(ctx, func() string { return "the next chunk" })
	stream := &endedReadStream{chunks: []*pb.Chunk{{Offset: 0, Length: uint64(len(want)), Payload: &pb.Chunk_Slot{Slot: slot}, Last: true}}}
	r := &remoteReader{c: c, stream: stream, cancel: wd.stop, pool: pool, arena: true, window: 2,
		pending: map[uint32]*Chunk{slot: granted}, ctx: wctx, wd: wd}
	defer r.Close()

	chunk, err := r.NextChunk(ctx)
	if err != nil {
		t.Fatalf("the first chunk: %v", err)
	}
	if !bytes.Equal(chunk.Data, want) {
		t.Errorf("the chunk holds %q, want %q", chunk.Data, want)
	}
	chunk.Release()
	if _, err := r.NextChunk(ctx); err != io.EOF {
		t.Errorf("after the last chunk: %v, want io.EOF", err)
	}
}
