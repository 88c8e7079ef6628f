// Command oldplugin stands for software built against the first release of
// the plugin protocol, sluice.plugin.v1 version 1.0, for sluice's protocol
// compatibility tests. It links only go-plugin, gRPC and code generated from
// the frozen sluice_plugin_1.0.proto (package pb10) — nothing of the
// current SDK — so it knows none of the fields later minors added.
//
// Run by a host, it is a 1.0 plugin serving source and sink "legacy": a
// directory holding manifest.json and one NNNN.bin file per tensor, moved
// through inline chunks only (no arena, no file references: what a plugin in
// another language would do). Built with -ldflags "-X main.protocol=2" it
// offers protocol 2 instead, which a v1 host must refuse by name.
//
// Run as `oldplugin host DIR COMPONENT CMD ARGS…`, it is a 1.0 host: it
// starts CMD as a plugin, writes one tensor to DIR through sink COMPONENT,
// reads it back through source COMPONENT, and prints "OK" when the bytes
// match.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sluice-ml/sluice/cmd/sluice/testdata/oldplugin/pb10"
)

// protocol is the app protocol version offered in the handshake.
var protocol = "1"

// handshake is protocol 1's: the magic cookie is part of the protocol.
func handshake(v int) goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  uint(v),
		MagicCookieKey:   "SLUICE_PLUGIN_MAGIC_COOKIE",
		MagicCookieValue: "8f1d2c3b7a6e4f50b9c8d7e6f5a4b3c2",
	}
}

func main() {
	if len(os.Args) > 4 && os.Args[1] == "host" {
		if err := host(os.Args[2], os.Args[3], os.Args[4:]); err != nil {
			fmt.Fprintln(os.Stderr, "oldplugin host:", err)
			os.Exit(1)
		}
		fmt.Println("OK")
		return
	}
	v, err := strconv.Atoi(protocol)
	if err != nil {
		panic(err)
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  handshake(v),
		VersionedPlugins: map[int]goplugin.PluginSet{v: {"sluice": &grpcPlugin{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}

// grpcPlugin adapts the 1.0 services to go-plugin.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	srv := &server{sources: map[uint64]string{}, sinks: map[uint64]*sinkSession{}}
	pb.RegisterPluginServer(s, srv)
	pb.RegisterSourceServer(s, sourceServer{server: srv})
	pb.RegisterSinkServer(s, sinkServer{server: srv})
	return nil
}

func (grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// maxInline is protocol 1.0's largest inline chunk.
const maxInline = 1 << 20

type server struct {
	pb.UnimplementedPluginServer
	next    atomic.Uint64
	mu      sync.Mutex
	sources map[uint64]string
	sinks   map[uint64]*sinkSession
}

type sinkSession struct {
	dir      string
	manifest *pb.Manifest
	mu       sync.Mutex
	written  map[string]bool
}

func schema() *pb.Schema {
	return &pb.Schema{Attributes: []*pb.Attribute{{Name: "path", Type: "string", Required: true, Doc: "A directory."}}}
}

func (s *server) GetInfo(ctx context.Context, req *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	return &pb.GetInfoResponse{
		Name: "legacy", Version: "1.0.0", ProtocolMinor: 0,
		Components: []*pb.Component{
			{Kind: pb.Component_SOURCE, Name: "legacy", Doc: "Reads a legacy directory.", Schema: schema()},
			{Kind: pb.Component_SINK, Name: "legacy", Doc: "Writes a legacy directory.", Schema: schema()},
		},
		Capabilities: &pb.Capabilities{MaxInline: maxInline},
	}, nil
}

func (s *server) Probe(ctx context.Context, req *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	return &pb.ProbeResponse{}, nil
}

func configPath(raw []byte) (string, error) {
	var cfg struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.Path == "" {
		return "", status.Error(codes.FailedPrecondition, "path must be set")
	}
	return cfg.Path, nil
}

type sourceServer struct {
	pb.UnimplementedSourceServer
	*server
}

func (s sourceServer) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	p, err := configPath(req.ConfigJson)
	if err != nil {
		return nil, err
	}
	id := s.next.Add(1)
	s.mu.Lock()
	s.sources[id] = p
	s.mu.Unlock()
	return &pb.OpenResponse{Session: id}, nil
}

func (s sourceServer) dir(id uint64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.sources[id]
	if !ok {
		return "", status.Errorf(codes.NotFound, "no source session %d", id)
	}
	return d, nil
}

func readManifest(dir string) (*pb.Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var m pb.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &m, nil
}

func (s sourceServer) Describe(ctx context.Context, req *pb.SessionRequest) (*pb.DescribeResponse, error) {
	d, err := s.dir(req.Session)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(d)
	if err != nil {
		return nil, err
	}
	return &pb.DescribeResponse{Manifest: m}, nil
}

func (s sourceServer) Read(stream pb.Source_ReadServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "a read starts with ReadStart")
	}
	d, err := s.dir(start.Session)
	if err != nil {
		return err
	}
	m, err := readManifest(d)
	if err != nil {
		return err
	}
	for i, t := range m.Tensors {
		if t.Name != start.Tensor {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, fmt.Sprintf("%04d.bin", i)))
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		n := uint64(maxInline)
		if start.MaxChunk > 0 && start.MaxChunk < n {
			n = start.MaxChunk
		}
		if a := max(start.Align, 1); n >= a {
			n -= n % a
		}
		for off := uint64(0); ; {
			end := min(off+n, uint64(len(b)))
			if err := stream.Send(&pb.Chunk{Offset: off, Length: end - off, Payload: &pb.Chunk_Inline{Inline: b[off:end]}, Last: end == uint64(len(b))}); err != nil {
				return err
			}
			off = end
			if off == uint64(len(b)) {
				return nil
			}
		}
	}
	return status.Errorf(codes.InvalidArgument, "no tensor %q", start.Tensor)
}

func (s sourceServer) Close(ctx context.Context, req *pb.SessionRequest) (*pb.Empty, error) {
	s.mu.Lock()
	delete(s.sources, req.Session)
	s.mu.Unlock()
	return &pb.Empty{}, nil
}

type sinkServer struct {
	pb.UnimplementedSinkServer
	*server
}

func (s sinkServer) session(id uint64) (*sinkSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sinks[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no sink session %d", id)
	}
	return ss, nil
}

func (s sinkServer) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	p, err := configPath(req.ConfigJson)
	if err != nil {
		return nil, err
	}
	id := s.next.Add(1)
	s.mu.Lock()
	s.sinks[id] = &sinkSession{dir: p}
	s.mu.Unlock()
	return &pb.OpenResponse{Session: id}, nil
}

func (s sinkServer) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	ss, err := s.session(req.Session)
	if err != nil {
		return nil, err
	}
	return &pb.PlanResponse{Files: []*pb.PlannedFile{{Path: filepath.Join(ss.dir, "manifest.json"), Tensors: uint32(len(req.Manifest.GetTensors()))}}}, nil
}

func (ss *sinkSession) tmp() string { return ss.dir + ".tmp" }

func (s sinkServer) Begin(ctx context.Context, req *pb.BeginRequest) (*pb.Empty, error) {
	ss, err := s.session(req.Session)
	if err != nil {
		return nil, err
	}
	ss.manifest, ss.written = req.Manifest, map[string]bool{}
	os.RemoveAll(ss.tmp())
	if err := os.MkdirAll(ss.tmp(), 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.Empty{}, nil
}

func (s sinkServer) Write(stream pb.Sink_WriteServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "a write starts with WriteStart")
	}
	ss, err := s.session(start.Session)
	if err != nil {
		return err
	}
	idx := -1
	for i, t := range ss.manifest.Tensors {
		if t.Name == start.Tensor {
			idx = i
		}
	}
	if idx < 0 {
		return status.Errorf(codes.InvalidArgument, "tensor %q was not planned", start.Tensor)
	}
	f, err := os.Create(filepath.Join(ss.tmp(), fmt.Sprintf("%04d.bin", idx)))
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	defer f.Close()
	var got uint64
	if ref := start.File; ref != nil {
		// A 1.0 host sends references only to plugins announcing file_ref;
		// read it anyway.
		src, err := os.Open(ref.Path)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		n, err := io.Copy(f, io.NewSectionReader(src, int64(ref.Offset), int64(ref.Length)))
		src.Close()
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		got = uint64(n)
	} else {
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			c := msg.GetChunk()
			in, ok := c.GetPayload().(*pb.Chunk_Inline)
			if c == nil || !ok {
				return status.Error(codes.InvalidArgument, "this plugin takes inline chunks only")
			}
			if _, err := f.WriteAt(in.Inline, int64(c.Offset)); err != nil {
				return status.Error(codes.Internal, err.Error())
			}
			got += uint64(len(in.Inline))
			if c.Last {
				break
			}
		}
	}
	if got != start.Size {
		return status.Errorf(codes.InvalidArgument, "tensor %q: %d of %d bytes arrived", start.Tensor, got, start.Size)
	}
	ss.mu.Lock()
	ss.written[start.Tensor] = true
	ss.mu.Unlock()
	return stream.Send(&pb.WriteAck{Done: true})
}

func (s sinkServer) Commit(ctx context.Context, req *pb.SessionRequest) (*pb.CommitResponse, error) {
	ss, err := s.session(req.Session)
	if err != nil {
		return nil, err
	}
	for _, t := range ss.manifest.Tensors {
		if !ss.written[t.Name] {
			return nil, status.Errorf(codes.FailedPrecondition, "tensor %q never arrived", t.Name)
		}
	}
	b, err := json.Marshal(ss.manifest)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.WriteFile(filepath.Join(ss.tmp(), "manifest.json"), b, 0o644); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	os.RemoveAll(ss.dir)
	if err := os.Rename(ss.tmp(), ss.dir); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.CommitResponse{Artifacts: []*pb.Artifact{{Path: filepath.Join(ss.dir, "manifest.json"), Size: uint64(len(b))}}}, nil
}

func (s sinkServer) Abort(ctx context.Context, req *pb.SessionRequest) (*pb.Empty, error) {
	if ss, err := s.session(req.Session); err == nil {
		os.RemoveAll(ss.tmp())
	}
	return &pb.Empty{}, nil
}

// host drives the plugin started by argv as a 1.0 host: one f32 tensor
// through sink component into dir, and back through source component.
func host(dir, component string, argv []string) error {
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake(1),
		VersionedPlugins: map[int]goplugin.PluginSet{1: {"sluice": &grpcPlugin{}}},
		Cmd:              exec.Command(argv[0], argv[1:]...),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
	})
	defer c.Kill()
	rpc, err := c.Client()
	if err != nil {
		return err
	}
	raw, err := rpc.Dispense("sluice")
	if err != nil {
		return err
	}
	conn := raw.(*grpc.ClientConn)
	ctx := context.Background()
	info, err := pb.NewPluginClient(conn).GetInfo(ctx, &pb.GetInfoRequest{HostProtocolMinor: 0})
	if err != nil {
		return err
	}
	fmt.Printf("plugin %s %s speaks 1.%d\n", info.Name, info.Version, info.ProtocolMinor)

	data := make([]byte, 4*6)
	for i := range data {
		data[i] = byte(i * 7)
	}
	m := &pb.Manifest{Tensors: []*pb.TensorInfo{{Name: "w", Dtype: "f32", Shape: []uint64{2, 3}, Size: uint64(len(data))}}}
	cfg, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "out."+component)})
	sink := pb.NewSinkClient(conn)
	open, err := sink.Open(ctx, &pb.OpenRequest{Component: component, ConfigJson: cfg})
	if err != nil {
		return fmt.Errorf("sink open: %w", err)
	}
	plan, err := sink.Plan(ctx, &pb.PlanRequest{Session: open.Session, Manifest: m})
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if len(plan.Convert) > 0 {
		return fmt.Errorf("the sink converts %s", plan.Convert[0].Tensor)
	}
	if _, err := sink.Begin(ctx, &pb.BeginRequest{Session: open.Session, Manifest: m}); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	w, err := sink.Write(ctx)
	if err != nil {
		return err
	}
	if err := w.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Start{Start: &pb.WriteStart{Session: open.Session, Tensor: "w", Size: uint64(len(data))}}}); err != nil {
		return err
	}
	if err := w.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{Offset: 0, Length: uint64(len(data)), Payload: &pb.Chunk_Inline{Inline: data}, Last: true}}}); err != nil {
		return err
	}
	w.CloseSend()
	for {
		ack, err := w.Recv()
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if ack.Done {
			break
		}
	}
	arts, err := sink.Commit(ctx, &pb.SessionRequest{Session: open.Session})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if len(arts.Artifacts) == 0 {
		return errors.New("commit reported no artifact")
	}
	src := pb.NewSourceClient(conn)
	so, err := src.Open(ctx, &pb.OpenRequest{Component: component, ConfigJson: cfg})
	if err != nil {
		return fmt.Errorf("source open: %w", err)
	}
	d, err := src.Describe(ctx, &pb.SessionRequest{Session: so.Session})
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if len(d.Manifest.Tensors) != 1 || d.Manifest.Tensors[0].Name != "w" || d.Manifest.Tensors[0].Dtype != "f32" {
		return fmt.Errorf("described %v", d.Manifest.Tensors)
	}
	r, err := src.Read(ctx)
	if err != nil {
		return err
	}
	if err := r.Send(&pb.ReadRequest{Msg: &pb.ReadRequest_Start{Start: &pb.ReadStart{Session: so.Session, Tensor: "w", Align: 1}}}); err != nil {
		return err
	}
	var got []byte
	for {
		c, err := r.Recv()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		in, ok := c.Payload.(*pb.Chunk_Inline)
		if !ok {
			return errors.New("the plugin sent a chunk that is not inline to a host without an arena")
		}
		got = append(got, in.Inline...)
		if c.Last {
			break
		}
	}
	if string(got) != string(data) {
		return fmt.Errorf("read back %x, wrote %x", got, data)
	}
	_, err = src.Close(ctx, &pb.SessionRequest{Session: so.Session})
	return err
}
