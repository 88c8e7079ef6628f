package main

import (
	"errors"
	"fmt"
	"os/exec"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/internal/standby"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// aheadProcesses gives the plugin host the processes internal/standby
// started as this one started.
type aheadProcesses struct{}

var _ host.Ahead = aheadProcesses{}

// Take returns how to tell a waiting process of exe a plugin's command, or
// nil when none waits.
func (aheadProcesses) Take(exe string) func(cmd *exec.Cmd) (plugin.Process, error) {
	p := standby.Take(exe)
	if p == nil {
		return nil
	}
	return func(cmd *exec.Cmd) (plugin.Process, error) {
		if err := p.Start(cmd.Args[1:], cmd.Env, cmd.ExtraFiles); err != nil {
			p.Abandon()
			if errors.Is(err, standby.ErrGone) {
				// Launch then starts the command itself.
				return nil, fmt.Errorf("%w: %w", plugin.ErrNotStarted, err)
			}
			return nil, err
		}
		return p, nil
	}
}

// Release ends the processes no plugin took.
func (aheadProcesses) Release() { standby.Release() }
