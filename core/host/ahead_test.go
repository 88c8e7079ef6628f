package host

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestMain serves the built-in plugin "empty" when the host re-executes
// this test binary as `plugin serve empty`.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "plugin" && os.Args[2] == "serve" {
		plugin.Serve(emptyPlugin())
		return
	}
	os.Exit(m.Run())
}

func emptyPlugin() *plugin.Plugin { return &plugin.Plugin{Name: "empty", Version: "1.0.0"} }

// startedAhead is an Ahead whose processes are the commands it is given,
// exec'd when Start is called, as a process started ahead would run them.
type startedAhead struct {
	taken    []string
	commands [][]string
	released int
}

func (a *startedAhead) Take(exe string) func(*exec.Cmd) (plugin.Process, error) {
	a.taken = append(a.taken, exe)
	return func(cmd *exec.Cmd) (plugin.Process, error) {
		a.commands = append(a.commands, cmd.Args)
		return plugin.ExecProcess(cmd)
	}
}

func (a *startedAhead) Release() { a.released++ }

// TestBuiltinsAreServedByProcessesStartedAhead: the host asks its Ahead for
// a process of its executable for each built-in plugin it starts, and
// releases the rest when it closes.
func TestBuiltinsAreServedByProcessesStartedAhead(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ahead := &startedAhead{}
	h := New(Options{Builtins: []Builtin{{Name: "empty", New: emptyPlugin}}, Executable: exe, Ahead: ahead})
	inst, err := h.Instance(context.Background(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	if inst.Info().Name != "empty" {
		t.Errorf("the plugin served: %+v", inst.Info())
	}
	if !slices.Equal(ahead.taken, []string{exe}) || len(ahead.commands) != 1 || !slices.Equal(ahead.commands[0][1:], []string{"plugin", "serve", "empty"}) {
		t.Errorf("taken %q, commands %q; want one process of %s told `plugin serve empty`", ahead.taken, ahead.commands, exe)
	}
	h.Close()
	if ahead.released != 1 {
		t.Errorf("Release called %d times by Close, want once", ahead.released)
	}

	// In-process, nothing is taken.
	ahead = &startedAhead{}
	h = New(Options{Builtins: []Builtin{{Name: "empty", New: emptyPlugin}}, Executable: exe, Ahead: ahead, InProcess: true})
	if _, err := h.Instance(context.Background(), "empty"); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if len(ahead.taken) != 0 {
		t.Errorf("an in-process host took %q", ahead.taken)
	}
}
