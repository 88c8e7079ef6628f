package plugin_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestLaunchThroughStart has LaunchConfig.Start start the plugin: it is
// given the whole command (the arena and the lane socket among its files,
// the handshake's variables in its environment), and the plugin serves over
// them as if Launch had exec'd it.
func TestLaunchThroughStart(t *testing.T) {
	arena, err := plugin.NewArena(4, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	var given []*exec.Cmd
	var proc plugin.Process
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{serveEnv + "=1", "CHOSEN=yes"}
	c, err := plugin.Launch(plugin.LaunchConfig{
		Cmd: cmd, Arena: arena, Label: "plugin gen", StartTimeout: 30 * time.Second, HostTLS: true,
		Start: func(cmd *exec.Cmd) (plugin.Process, error) {
			given = append(given, cmd)
			p, err := plugin.ExecProcess(cmd)
			proc = p
			return p, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(given) != 1 {
		t.Fatalf("Start was called %d times, want once", len(given))
	}
	info := c.Info()
	if info.Name != "gen" || !info.Arena || !info.WriteLanes {
		t.Errorf("the plugin started through Start: %+v; want gen, mapping the arena, serving write lanes", info)
	}
	if c.Pid() != proc.Pid() {
		t.Errorf("Pid() = %d, want the started process's %d", c.Pid(), proc.Pid())
	}
	env := given[0].Env
	if !slices.Contains(env, "CHOSEN=yes") || !slices.Contains(env, plugin.Handshake.MagicCookieKey+"="+plugin.Handshake.MagicCookieValue) {
		t.Errorf("the command's environment lacks the host's choice or the handshake:\n%s", strings.Join(env, "\n"))
	}
	if len(given[0].ExtraFiles) != 2 {
		t.Errorf("the command has %d extra files, want the arena and the lane socket", len(given[0].ExtraFiles))
	}
	c.Close()
	testwait.Until(t, "the plugin process exiting", c.Exited)
}

// TestLaunchWithoutAStartedProcessExecs: a Start whose error wraps
// ErrNotStarted leaves the launch to Launch, which exec's the command as
// it was given, its environment not doubled by the first attempt.
func TestLaunchWithoutAStartedProcessExecs(t *testing.T) {
	arena, err := plugin.NewArena(4, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{serveEnv + "=1"}
	calls := 0
	c, err := plugin.Launch(plugin.LaunchConfig{
		Cmd: cmd, Arena: arena, Label: "plugin gen", StartTimeout: 30 * time.Second, HostTLS: true,
		Start: func(*exec.Cmd) (plugin.Process, error) {
			calls++
			return nil, fmt.Errorf("%w: the waiting process died", plugin.ErrNotStarted)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if calls != 1 || c.Info().Name != "gen" || !c.Info().Arena {
		t.Fatalf("Start called %d times; the plugin: %+v", calls, c.Info())
	}
	if c.Pid() != cmd.Process.Pid {
		t.Errorf("Pid() = %d, want the exec'd command's %d", c.Pid(), cmd.Process.Pid)
	}
	if n := len(cmd.ExtraFiles); n != 2 {
		t.Errorf("the exec'd command had %d extra files, want 2", n)
	}
	seen := map[string]bool{}
	for _, kv := range cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("%s is twice in the exec'd command's environment", k)
		}
		seen[k] = true
	}

	// Any other error of Start is the launch's.
	_, err = plugin.Launch(plugin.LaunchConfig{
		Cmd: exec.Command(os.Args[0], "-test.run=^$"), Label: "plugin gen", StartTimeout: 30 * time.Second,
		Start: func(*exec.Cmd) (plugin.Process, error) { return nil, errors.New("no room") },
	})
	if err == nil || !strings.Contains(err.Error(), "no room") || !strings.Contains(err.Error(), "plugin gen") {
		t.Errorf("a Start that failed: %v", err)
	}
}

// TestStartIsNotCalledForABinaryThatDoesNotMatchItsPin: Launch checks the
// pin itself before Start, as go-plugin does before it execs.
func TestStartIsNotCalledForABinaryThatDoesNotMatchItsPin(t *testing.T) {
	calls := 0
	_, err := plugin.Launch(plugin.LaunchConfig{
		Cmd: exec.Command(os.Args[0], "-test.run=^$"), SHA256: make([]byte, 32), Label: "plugin gen", StartTimeout: 30 * time.Second,
		Start: func(cmd *exec.Cmd) (plugin.Process, error) { calls++; return plugin.ExecProcess(cmd) },
	})
	if err == nil || !strings.Contains(err.Error(), "does not match its pinned sha256") || calls != 0 {
		t.Errorf("a binary that does not match its pin: %v, Start called %d times", err, calls)
	}
}
