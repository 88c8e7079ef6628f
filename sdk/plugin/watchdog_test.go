package plugin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// stuck blocks until its context ends: a plugin that hangs.
func stuck(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

type hangSource struct{ hangOpen bool }

func (s *hangSource) Describe(ctx context.Context) (*tensor.Manifest, error) {
	if !s.hangOpen {
		return nil, stuck(ctx)
	}
	return &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "t", DType: tensor.U8, Shape: []uint64{64}, Size: 64}}}, nil
}
func (s *hangSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return io.NopCloser(blockingReader{ctx}), nil
}
func (s *hangSource) Close() error { return nil }

type blockingReader struct{ ctx context.Context }

func (r blockingReader) Read(p []byte) (int, error) { return 0, stuck(r.ctx) }

// slowSink takes its time over every chunk, or never reads at all.
type slowSink struct {
	delay time.Duration
	buf   int
	never bool
	got   atomic.Int64
}

func (s *slowSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	return &SinkPlan{}, nil
}
func (s *slowSink) Begin(ctx context.Context, m *tensor.Manifest, _ BeginOptions) error { return nil }
func (s *slowSink) Write(ctx context.Context, name string, data TensorData) error {
	if s.never {
		return stuck(ctx)
	}
	buf := make([]byte, max(s.buf, 16))
	for {
		time.Sleep(s.delay)
		n, err := data.Read(buf)
		s.got.Add(int64(n))
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
func (s *slowSink) Commit(ctx context.Context) ([]Artifact, error) { return nil, nil }
func (s *slowSink) Abort(ctx context.Context) error                { return nil }

// connect serves p over an in-memory gRPC connection (with opts) and
// returns a client with the given timeout whose onHang counts calls.
func connect(t *testing.T, p *Plugin, timeout time.Duration, opts ...grpc.ServerOption) (*rpcClient, *atomic.Int32) {
	t.Helper()
	return connectArena(t, p, nil, timeout, opts...)
}

// connectArena is connect with an arena both ends share, as a plugin
// process maps the host's.
func connectArena(t *testing.T, p *Plugin, arena *Arena, timeout time.Duration, opts ...grpc.ServerOption) (*rpcClient, *atomic.Int32) {
	t.Helper()
	c, _, hangs := serveArena(t, p, arena, timeout, opts...)
	return c, hangs
}

// serveArena is connectArena that also returns the plugin's server.
func serveArena(t *testing.T, p *Plugin, arena *Arena, timeout time.Duration, opts ...grpc.ServerOption) (*rpcClient, *server, *atomic.Int32) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(opts...)
	srv := newServer(p, arena)
	pb.RegisterPluginServer(gs, srv)
	pb.RegisterSourceServer(gs, sourceServer{server: srv})
	pb.RegisterSinkServer(gs, sinkServer{server: srv})
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := newRPCClient(context.Background(), conn, arena, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.timeout = timeout
	hangs := &atomic.Int32{}
	c.onHang = func(*HangError) { hangs.Add(1) }
	return c, srv, hangs
}

func testPlugin(src Source, sink Sink) *Plugin {
	type cfg struct{}
	return &Plugin{Name: "hang", Version: "0",
		Sources: []SourceType{NewSourceType("hang", "", func(ctx context.Context, _ *cfg) (Source, error) { return src, nil })},
		Sinks:   []SinkType{NewSinkType("hang", "", func(ctx context.Context, _ *cfg) (Sink, error) { return sink, nil })},
	}
}

func wantHang(t *testing.T, what string, err error, hangs *atomic.Int32, began time.Time, timeout time.Duration) {
	t.Helper()
	var he *HangError
	if !errors.As(err, &he) || !errors.Is(err, ErrPluginHung) {
		t.Fatalf("%s: got %v, want a *HangError", what, err)
	}
	if hangs.Load() == 0 {
		t.Errorf("%s: the plugin was not stopped", what)
	}
	if d := time.Since(began); d < timeout || d > timeout+5*time.Second {
		t.Errorf("%s: gave up after %s, the timeout is %s", what, d, timeout)
	}
}

// TestHungPluginIsStopped checks the watchdog on every kind of wait: a call
// that never returns, a read whose chunks never come, a write whose bytes
// the plugin never takes.
func TestHungPluginIsStopped(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ctx := context.Background()
	cfg := MustConfig(map[string]any{})

	t.Run("call", func(t *testing.T) {
		c, hangs := connect(t, testPlugin(&hangSource{}, &slowSink{}), timeout)
		src, err := c.OpenSource(ctx, "hang", cfg)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		_, err = src.Describe(ctx)
		wantHang(t, "Describe", err, hangs, began, timeout)
		if he := (*HangError)(nil); errors.As(err, &he) && he.Op != "Describe" {
			t.Errorf("the error names %q, want Describe", he.Op)
		}
	})
	t.Run("read", func(t *testing.T) {
		c, hangs := connect(t, testPlugin(&hangSource{hangOpen: true}, &slowSink{}), timeout)
		src, err := c.OpenSource(ctx, "hang", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Describe(ctx); err != nil {
			t.Fatal(err)
		}
		rc, err := src.Open(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		began := time.Now()
		_, err = io.ReadAll(rc)
		wantHang(t, "read", err, hangs, began, timeout)
	})
	t.Run("write", func(t *testing.T) {
		c, hangs := connect(t, testPlugin(&hangSource{}, &slowSink{never: true}), timeout)
		sk, err := c.OpenSink(ctx, "hang", cfg)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		// More than gRPC's flow-control window, so the sends block.
		err = sk.Write(ctx, "t", BytesData(bytes.Repeat([]byte{1}, 8<<20)))
		wantHang(t, "write", err, hangs, began, timeout)
		if he := (*HangError)(nil); errors.As(err, &he) && he.Op != `tensor "t" to be written` {
			t.Errorf("the error names %q, want the tensor's write", he.Op)
		}
	})
}

// TestSlowPluginIsNotStopped: a plugin that takes longer than the timeout
// over a whole tensor, but keeps taking its bytes, is left alone.
func TestSlowPluginIsNotStopped(t *testing.T) {
	const timeout = time.Second
	ctx := context.Background()
	sink := &slowSink{delay: 10 * time.Millisecond, buf: 64 << 10}
	c, hangs := connect(t, testPlugin(&hangSource{hangOpen: true}, sink), timeout)
	sk, err := c.OpenSink(ctx, "hang", MustConfig(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := sk.Write(ctx, "t", BytesData(make([]byte, 8<<20))); err != nil {
		t.Fatalf("a slow sink was stopped: %v", err)
	}
	if time.Since(began) < timeout || hangs.Load() != 0 || sink.got.Load() != 8<<20 {
		t.Errorf("the write took %s (want more than the %s timeout for the test to mean anything), %d hangs, %d bytes", time.Since(began), timeout, hangs.Load(), sink.got.Load())
	}
}

// TestSlowHostDoesNotCountAgainstThePlugin: time the host itself takes
// between chunks is not the plugin's.
func TestSlowHostDoesNotCountAgainstThePlugin(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ctx := context.Background()
	c, hangs := connect(t, testPlugin(&sizedSource{size: 3 << 20}, &slowSink{}), timeout)
	src, err := c.OpenSource(ctx, "hang", MustConfig(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Describe(ctx); err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 1<<20)
	total := 0
	for {
		n, err := rc.Read(buf)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", total, err)
		}
		time.Sleep(2 * timeout)
	}
	if total != 3<<20 || hangs.Load() != 0 {
		t.Errorf("read %d bytes, %d hangs", total, hangs.Load())
	}
}

// TestAnotherPluginsHangIsNotThisOnes is a regression test: when one plugin
// hung, the run's context was canceled with its *HangError as the cause, and
// every other plugin still waiting took that cause for its own hang — and was
// killed, under the first plugin's error relabelled with its own name.
func TestAnotherPluginsHangIsNotThisOnes(t *testing.T) {
	c, hangs := connect(t, testPlugin(&hangSource{}, &slowSink{never: true}), time.Minute)
	sk, err := c.OpenSink(context.Background(), "hang", MustConfig(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	other := &HangError{Label: `plugin "other"`, Op: "x", Timeout: time.Second}
	time.AfterFunc(200*time.Millisecond, func() { cancel(other) })
	err = sk.Write(ctx, "t", BytesData(bytes.Repeat([]byte{1}, 8<<20)))
	var he *HangError
	if err == nil || (errors.As(err, &he) && he == other) || hangs.Load() != 0 || other.Label != `plugin "other"` {
		t.Errorf("got %v with %d hangs; the other plugin's hang was taken for this one's", err, hangs.Load())
	}
}

// TestCallsEndedByAHangReportTheHang is a regression test: when the host
// stopped a hung plugin, another stream the kill ended could reach the run
// first and report a crash ("signal: killed"), hiding why the plugin was
// stopped and what it was waiting for.
func TestCallsEndedByAHangReportTheHang(t *testing.T) {
	c, err := Launch(LaunchConfig{Cmd: servingCmd(""), Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hang := &HangError{Op: `tensor "w" to be written`, Timeout: time.Second}
	c.stopHung(hang)
	for end := time.Now().Add(10 * time.Second); !c.gp.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the hung plugin was not killed")
		}
	}
	_, err = c.OpenSource(context.Background(), "gen", MustConfig(map[string]any{}))
	var he *HangError
	if !errors.As(err, &he) || he != hang {
		t.Fatalf("a call the kill ended reports %v, want the hang", err)
	}
	if he.Label != "plugin gen" || !strings.Contains(err.Error(), `made no progress for 1s waiting for tensor "w" to be written`) {
		t.Errorf("the hang names %q: %v", he.Label, err)
	}
}
