package plugin

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// startedProcess runs a plugin through LaunchConfig.Start: it is go-plugin's
// runner for a process go-plugin does not exec.
type startedProcess struct {
	cmd       *exec.Cmd
	start     func(*exec.Cmd) (Process, error)
	handshake []string // go-plugin's environment for the plugin
	socketDir string
	process   Process
}

var _ runner.Runner = (*startedProcess)(nil)

// runner is go-plugin's ClientConfig.RunnerFunc. go-plugin describes the
// process in a command of its own, whose environment holds the handshake's
// variables (and, unless the host's environment is skipped, the host's).
func (s *startedProcess) runner(_ hclog.Logger, gp *exec.Cmd, socketDir string) (runner.Runner, error) {
	s.handshake, s.socketDir = gp.Env, socketDir
	return s, nil
}

// Start completes the command's environment and has the process started.
func (s *startedProcess) Start(context.Context) error {
	s.cmd.Env = append(s.cmd.Env, s.handshake...)
	p, err := s.start(s.cmd)
	if err != nil {
		// go-plugin removes the directory it made for the plugin's socket
		// only when it stops a process that started.
		os.RemoveAll(s.socketDir)
		return err
	}
	s.process = p
	return nil
}

// Diagnose has nothing to add to a failed handshake.
func (s *startedProcess) Diagnose(context.Context) string { return "" }

// Stdout is the process's standard output, which carries the handshake.
func (s *startedProcess) Stdout() io.ReadCloser { return s.process.Stdout() }

// Stderr is the process's standard error.
func (s *startedProcess) Stderr() io.ReadCloser { return s.process.Stderr() }

// Name is the plugin's binary.
func (s *startedProcess) Name() string { return s.cmd.Path }

// Wait waits for the process to exit.
func (s *startedProcess) Wait(context.Context) error { return s.process.Wait() }

// Kill kills the process.
func (s *startedProcess) Kill(context.Context) error { return s.process.Kill() }

// ID is the process's pid, or empty before it started.
func (s *startedProcess) ID() string {
	if s.process == nil {
		return ""
	}
	return strconv.Itoa(s.process.Pid())
}

// PluginToHost returns the plugin's address as it is: both run on this
// machine.
func (s *startedProcess) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin returns the host's address as it is.
func (s *startedProcess) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// ExecProcess starts cmd with its standard output and error to pipes, as
// Launch starts a plugin, and returns it as a Process: a LaunchConfig.Start
// that adjusts the command (its SysProcAttr, its directory) and starts it
// itself.
func ExecProcess(cmd *exec.Cmd) (Process, error) {
	p := &execProcess{cmd: cmd}
	var err error
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if p.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// execProcess is a command ExecProcess started.
type execProcess struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
}

func (p *execProcess) Pid() int              { return p.cmd.Process.Pid }
func (p *execProcess) Stdout() io.ReadCloser { return p.stdout }
func (p *execProcess) Stderr() io.ReadCloser { return p.stderr }
func (p *execProcess) Wait() error           { return p.cmd.Wait() }
func (p *execProcess) Kill() error           { return p.cmd.Process.Kill() }
