//go:build !linux

package standby

import (
	"errors"
	"io"
	"os"
)

// Process is a sluice process started ahead; off Linux there are none.
type Process struct{}

// Spawn starts no process off Linux.
func Spawn(exe string) (*Process, error) {
	return nil, errors.New("standby process: not supported on this system")
}

// Take returns nil: off Linux no process is started ahead.
func Take(path string) *Process { return nil }

// Release does nothing off Linux.
func Release() {}

// Await returns ErrNotNeeded off Linux, where no process waits.
func Await() ([]string, error) { return nil, ErrNotNeeded }

// Abandon does nothing.
func (p *Process) Abandon() {}

// Start fails: there is no process.
func (p *Process) Start(args, env []string, files []*os.File) error { return ErrGone }

// Pid is 0.
func (p *Process) Pid() int { return 0 }

// Name is empty.
func (p *Process) Name() string { return "" }

// Stdout is nil.
func (p *Process) Stdout() io.ReadCloser { return nil }

// Stderr is nil.
func (p *Process) Stderr() io.ReadCloser { return nil }

// Wait returns ErrGone.
func (p *Process) Wait() error { return ErrGone }

// Kill does nothing.
func (p *Process) Kill() error { return nil }
