package plugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// Handshake is the go-plugin handshake every Sluice plugin uses. The magic
// cookie only keeps people from running a plugin binary by hand; it is not a
// security measure.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SLUICE_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "8f1d2c3b7a6e4f50b9c8d7e6f5a4b3c2",
}

// pluginKey names the single go-plugin plugin a Sluice binary serves.
const pluginKey = "sluice"

// Environment variables through which the host passes the shared arena.
const (
	envArenaFD       = "SLUICE_ARENA_FD"
	envArenaSlots    = "SLUICE_ARENA_SLOTS"
	envArenaSlotSize = "SLUICE_ARENA_SLOT_SIZE"
)

// grpcPlugin adapts Sluice's services to go-plugin.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl  *Plugin // plugin side
	arena *Arena  // plugin side: the mapped arena; host side: the arena passed at spawn
	// lanes, plugin side: the lane socket the host passed, if any.
	lanes *net.UnixConn
	// hostLanes, host side: the host's end of the lane socket passed at
	// spawn, if any.
	hostLanes *laneSocket

	mu  sync.Mutex
	srv *server // plugin side, once serving
}

func (g *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	srv := newServer(g.impl, g.arena)
	if g.lanes != nil {
		srv.lanes = true
		sink := sinkServer{server: srv}
		go acceptLanes(g.lanes, sink.serveLaneOf)
	}
	g.mu.Lock()
	g.srv = srv
	g.mu.Unlock()
	pb.RegisterPluginServer(s, srv)
	pb.RegisterSourceServer(s, sourceServer{server: srv})
	pb.RegisterSinkServer(s, sinkServer{server: srv})
	return nil
}

func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newRPCClient(ctx, conn, g.arena, g.hostLanes)
}

// Serve runs p as a plugin process: call it from the plugin binary's main.
// It does not return. Run by hand (without a Sluice host), it prints a
// message and exits.
func Serve(p *Plugin) {
	if err := p.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice plugin:", err)
		os.Exit(1)
	}
	arena, err := arenaFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice plugin:", err)
		os.Exit(1)
	}
	lanes, err := laneSocketFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice plugin:", err)
		os.Exit(1)
	}
	g := &grpcPlugin{impl: p, arena: arena, lanes: lanes}
	go watchHost(g, os.Getppid(), hostPollInterval)
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{
			ProtocolVersion: {pluginKey: g},
		},
		// Certificates the host issued (LaunchConfig.HostTLS), if any;
		// otherwise go-plugin's AutoMTLS.
		TLSProvider: pluginTLSFromEnv,
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(maxMessageSize), grpc.MaxSendMsgSize(maxMessageSize))
			return grpc.NewServer(opts...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: p.Name, Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

// hostPollInterval is how often a plugin checks that its host still runs.
const hostPollInterval = 250 * time.Millisecond

// watchHost ends the plugin process when its host is gone — the parent
// process changed, because the host died (even by SIGKILL) and the plugin was
// re-parented — or when SIGTERM arrives. Every open sink is aborted first, so
// its temporary files go with the process: nothing is left running, holding
// files a later run would have to leave alone.
func watchHost(g *grpcPlugin, parent int, every time.Duration) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for gone := false; !gone; {
		select {
		case <-term:
			gone = true
		case <-tick.C:
			gone = parent > 1 && os.Getppid() != parent
		}
	}
	g.mu.Lock()
	srv := g.srv
	g.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		srv.abortAll(ctx)
		cancel()
	}
	// Nothing is written to stderr: the host that read it may be gone.
	os.Exit(1)
}

// arenaFromEnv maps the arena the host passed, if any.
func arenaFromEnv() (*Arena, error) {
	fdStr := os.Getenv(envArenaFD)
	if fdStr == "" {
		return nil, nil
	}
	fd, err1 := strconv.Atoi(fdStr)
	slots, err2 := strconv.Atoi(os.Getenv(envArenaSlots))
	size, err3 := strconv.Atoi(os.Getenv(envArenaSlotSize))
	if err1 != nil || err2 != nil || err3 != nil || fd < 3 || slots <= 0 || size <= 0 {
		return nil, fmt.Errorf("malformed arena settings %s=%q %s=%q %s=%q", envArenaFD, fdStr,
			envArenaSlots, os.Getenv(envArenaSlots), envArenaSlotSize, os.Getenv(envArenaSlotSize))
	}
	f := os.NewFile(uintptr(fd), "sluice-arena")
	if f == nil {
		return nil, fmt.Errorf("arena descriptor %d is not open", fd)
	}
	return MapArena(f, slots, size)
}
