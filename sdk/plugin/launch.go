package plugin

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// LaunchConfig says how to start a plugin process.
type LaunchConfig struct {
	// Cmd is the plugin command; Launch adds to its environment and files.
	// Its Env is the plugin's whole environment, or, when nil, this
	// process's environment, as with exec.Cmd.
	Cmd *exec.Cmd
	// Arena, when set, is passed to the plugin at spawn.
	Arena *Arena
	// SHA256, when set, is the pinned digest of Cmd.Path: a binary that
	// does not match is not started.
	SHA256 []byte
	// StartTimeout bounds the handshake; zero means one minute.
	StartTimeout time.Duration
	// Label names the plugin in errors, e.g. `plugin "gguf" (sink.out)`.
	Label string
	// HostTLS makes the host issue the certificates of both ends of the
	// connection (ECDSA P-256) instead of go-plugin's AutoMTLS, in which each
	// process generates a P-521 key: the plugin starts about 50 ms of CPU
	// sooner. Only a plugin built with this SDK's Serve understands it; the
	// host sets it for its built-in plugins, served by its own binary.
	HostTLS bool
	// Timeout bounds every wait for the plugin once it runs: a call, the
	// next chunk of a read, the release of a slot it was sent. A plugin
	// that makes no progress for that long is stopped (killed) and the
	// wait fails with a *HangError. Zero means DefaultTimeout; negative
	// waits forever.
	Timeout time.Duration
	// Start, when set, starts the plugin's process in place of exec'ing
	// Cmd: it is given Cmd complete (Args, the whole environment with the
	// handshake's variables, ExtraFiles) and returns the running process,
	// e.g. one started earlier that is told Cmd only now. An error that
	// wraps ErrNotStarted says that no process ran, and Launch then
	// exec's Cmd itself.
	Start func(cmd *exec.Cmd) (Process, error)
}

// Process is a plugin process that LaunchConfig.Start started.
type Process interface {
	// Pid is the process's id.
	Pid() int
	// Stdout and Stderr are its standard output, which carries the
	// handshake, and its standard error.
	Stdout() io.ReadCloser
	Stderr() io.ReadCloser
	// Wait waits for the process to exit, as exec.Cmd.Wait.
	Wait() error
	// Kill kills it.
	Kill() error
}

// ErrNotStarted, wrapped in the error of LaunchConfig.Start, says that no
// process ran.
var ErrNotStarted = errors.New("plugin process not started")

// Client is a running plugin process. It implements Instance.
type Client struct {
	*rpcClient
	gp      *goplugin.Client
	started *startedProcess // when LaunchConfig.Start started it
	stderr  *tail
	exitLog *tail
	label   string
	// laneSocket is the host's end of the lane socket passed at spawn, if
	// any; closed with the client.
	laneSocket *laneSocket
	hangOnce   sync.Once
	// hung is the hang the host stopped the plugin for; errors of other
	// calls and streams the kill ends report it, not a crash.
	hung atomic.Pointer[HangError]
}

// Launch starts a plugin process, performs the handshake (gRPC only, with
// mutual TLS: go-plugin's AutoMTLS, or certificates the host issues when
// HostTLS is set) and asks the plugin what it serves.
func Launch(cfg LaunchConfig) (*Client, error) {
	if cfg.Start != nil {
		// Launch adds to the command's environment and files: a second
		// attempt needs them as they were.
		first := cfg
		first.Cmd = cloneCmd(cfg.Cmd)
		c, err := launch(first)
		if !errors.Is(err, ErrNotStarted) {
			return c, err
		}
		cfg.Start = nil
	}
	return launch(cfg)
}

// cloneCmd copies a command that has not run, with slices of its own.
func cloneCmd(cmd *exec.Cmd) *exec.Cmd {
	return &exec.Cmd{
		Path:        cmd.Path,
		Args:        slices.Clone(cmd.Args),
		Env:         slices.Clone(cmd.Env),
		Dir:         cmd.Dir,
		ExtraFiles:  slices.Clone(cmd.ExtraFiles),
		SysProcAttr: cmd.SysProcAttr,
	}
}

func launch(cfg LaunchConfig) (*Client, error) {
	label := cfg.Label
	if label == "" {
		label = "plugin " + cfg.Cmd.Path
	}
	cmd := cfg.Cmd
	// As with exec.Cmd, a nil Env inherits this process's environment and
	// any other is the whole environment: go-plugin would otherwise add
	// ours to it, secrets (SLUICE_VAR_*) included.
	inherit := cmd.Env == nil
	if cfg.Arena != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, cfg.Arena.File())
		fd := 2 + len(cmd.ExtraFiles)
		cmd.Env = append(cmd.Env,
			envArenaFD+"="+strconv.Itoa(fd),
			envArenaSlots+"="+strconv.Itoa(cfg.Arena.Slots()),
			envArenaSlotSize+"="+strconv.Itoa(cfg.Arena.SlotSize()),
		)
	}
	// A plugin on this machine is written to over write lanes, if it serves
	// them; a system without Unix sockets writes over gRPC alone.
	var lanes *laneSocket
	launched := false
	if cfg.Arena != nil {
		if ls, theirs, err := newLaneSocket(); err == nil {
			defer theirs.Close() // the child has its own copy once started
			defer func() {
				if !launched {
					ls.Close()
				}
			}()
			lanes = ls
			cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
			cmd.Env = append(cmd.Env, envLaneFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
		}
	}
	st := &tail{max: 40}
	exitLog := &tail{max: 4}
	cc := &goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {pluginKey: &grpcPlugin{arena: cfg.Arena, hostLanes: lanes}}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      !inherit,
		Stderr:           st,
		SyncStderr:       st,
		StartTimeout:     cfg.StartTimeout,
		// go-plugin logs the process's exit status at error level.
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: &exitFilter{exitLog}, DisableTime: true}),
		GRPCDialOptions: nil,
	}
	if cfg.HostTLS {
		ht, err := newHostTLS()
		if err != nil {
			return nil, fmt.Errorf("%s: issuing TLS certificates: %w", label, err)
		}
		cmd.Env = append(cmd.Env, ht.env)
		cc.AutoMTLS, cc.TLSConfig = false, ht.client
	}
	var sc *goplugin.SecureConfig
	if cfg.SHA256 != nil {
		sc = &goplugin.SecureConfig{Checksum: cfg.SHA256, Hash: sha256.New()}
	}
	var started *startedProcess
	if cfg.Start != nil {
		// go-plugin checks the binary of the command it execs; here the
		// process is started by cfg.Start, so Launch checks it.
		if sc != nil {
			if ok, err := sc.Check(cmd.Path); err != nil {
				return nil, fmt.Errorf("%s: checking %s against its pinned sha256: %w", label, cmd.Path, err)
			} else if !ok {
				return nil, pinMismatch(label, cmd.Path)
			}
		}
		started = &startedProcess{cmd: cmd, start: cfg.Start}
		cc.Cmd, cc.RunnerFunc = nil, started.runner
	} else {
		cc.SecureConfig = sc
	}
	gp := goplugin.NewClient(cc)
	rpc, err := gp.Client()
	if err != nil {
		gp.Kill()
		if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
			return nil, pinMismatch(label, cmd.Path)
		}
		if v, ok := pluginProtocol(err); ok {
			return nil, &VersionError{Label: label, Path: cmd.Path, Plugin: v}
		}
		return nil, fmt.Errorf("%s: starting %s: %w%s", label, cmd.Path, err, st.quote())
	}
	raw, err := rpc.Dispense(pluginKey)
	if err != nil {
		gp.Kill()
		return nil, fmt.Errorf("%s: %w%s", label, err, st.quote())
	}
	rc := raw.(*rpcClient)
	c := &Client{rpcClient: rc, gp: gp, started: started, stderr: st, exitLog: exitLog, label: label, laneSocket: lanes}
	rc.wrap = c.explain
	switch {
	case cfg.Timeout == 0:
		rc.timeout = DefaultTimeout
	case cfg.Timeout > 0:
		rc.timeout = cfg.Timeout
	}
	rc.onHang = c.stopHung
	launched = true
	return c, nil
}

// pinMismatch is the error of a plugin binary whose sha256 is not its pin.
func pinMismatch(label, path string) error {
	return fmt.Errorf("%s: the binary %s does not match its pinned sha256; it was not started", label, path)
}

// stopHung kills a plugin that made no progress, so that it holds no file
// and no memory while the run aborts, and completes the error.
func (c *Client) stopHung(he *HangError) {
	he.Label = c.label
	he.Stderr = c.stderr.lines()
	c.hung.CompareAndSwap(nil, he)
	c.hangOnce.Do(func() {
		if pid := c.Pid(); pid > 0 {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
		c.gp.Kill()
	})
}

// explain adds what is known about a crash to an error from the plugin. A
// plugin the host stopped because it hung did not crash: every call and
// stream the kill ended reports the hang, whichever reaches the run first.
func (c *Client) explain(err error) error {
	if he := c.hung.Load(); he != nil {
		return he
	}
	if errors.Is(err, ErrPluginExited) || c.gp.Exited() {
		// Give the process a moment to be reaped and its stderr drained.
		for i := 0; i < 20 && !c.gp.Exited(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		ce := &CrashError{Label: c.label, Err: err, Stderr: c.stderr.lines()}
		for _, l := range c.exitLog.lines() {
			if _, status, ok := strings.Cut(l, "error="); ok {
				ce.Status = strings.Trim(strings.TrimSpace(status), `"`)
			}
		}
		return ce
	}
	return err
}

// Close stops the plugin process.
func (c *Client) Close() error {
	c.gp.Kill()
	if c.laneSocket != nil {
		c.laneSocket.Close()
	}
	return nil
}

// Exited reports whether the plugin process has exited.
func (c *Client) Exited() bool { return c.gp.Exited() }

// Pid returns the plugin process id, or 0.
func (c *Client) Pid() int {
	if c.started != nil && c.started.process != nil {
		return c.started.process.Pid()
	}
	if rc := c.gp.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// VersionError reports a plugin that speaks another major version of the
// plugin protocol than this host.
type VersionError struct {
	Label string
	Path  string
	// Plugin is the major protocol version the plugin offered.
	Plugin int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: %s speaks Sluice plugin protocol %d (sluice.plugin.v%d), but this host speaks protocol %d "+
		"(sluice.plugin.v%d, minors up to %d.%d); it was not started. Use a build of the plugin for protocol %d, or a Sluice that speaks protocol %d",
		e.Label, e.Path, e.Plugin, e.Plugin, ProtocolVersion, ProtocolVersion, ProtocolVersion, ProtocolMinor, ProtocolVersion, e.Plugin)
}

// BadConfig marks the error as a configuration problem: the wrong plugin
// build is installed.
func (e *VersionError) BadConfig() bool { return true }

// incompatibleRE matches go-plugin's handshake error for a plugin whose app
// protocol version the host does not accept.
var incompatibleRE = regexp.MustCompile(`incompatible API version with plugin\. Plugin version: (\d+)`)

// pluginProtocol extracts the protocol version a plugin offered from
// go-plugin's handshake error.
func pluginProtocol(err error) (int, bool) {
	m := incompatibleRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	v, convErr := strconv.Atoi(m[1])
	return v, convErr == nil
}

// CrashError reports a plugin process that died or stopped answering, with
// the last lines it wrote to stderr.
type CrashError struct {
	Label string
	Err   error
	// Status is the process's exit status, when known ("exit status 2",
	// "signal: killed").
	Status string
	Stderr []string
}

func (e *CrashError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s crashed or was killed", e.Label)
	if e.Status != "" {
		fmt.Fprintf(&b, " (%s)", e.Status)
	}
	if len(e.Stderr) > 0 {
		b.WriteString("; last lines of its stderr:\n")
		for _, l := range e.Stderr {
			b.WriteString("    " + l + "\n")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	return b.String() + " (it wrote nothing to stderr)"
}

// Unwrap returns ErrPluginExited.
func (e *CrashError) Unwrap() error { return ErrPluginExited }

// exitFilter keeps go-plugin's "plugin process exited" lines.
type exitFilter struct{ t *tail }

func (f *exitFilter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("plugin process exited")) {
		f.t.Write(p)
	}
	return len(p), nil
}

// tail keeps the last lines written to it.
type tail struct {
	mu      sync.Mutex
	max     int
	partial []byte
	buf     []string
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > 64<<10 {
		t.add(string(t.partial))
		t.partial = nil
	}
	return len(p), nil
}

func (t *tail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.buf = append(t.buf, line)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}

func (t *tail) quote() string {
	l := t.lines()
	if len(l) == 0 {
		return ""
	}
	return "\n    " + strings.Join(l, "\n    ")
}
