package plugin_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Environment variables that make the test binary a plugin whose sink holds
// a temporary file (lifeServeEnv) or a host that starts that plugin, begins
// its sink and waits to be killed (lifeHostEnv).
const (
	lifeServeEnv = "SLUICE_SDK_TEST_SERVE_LIFE"
	lifeHostEnv  = "SLUICE_SDK_TEST_HOST_LIFE"
)

func init() {
	switch {
	case os.Getenv(lifeServeEnv) == "1":
		plugin.Serve(lifePlugin())
		os.Exit(0)
	case os.Getenv(lifeHostEnv) != "":
		os.Exit(lifeHost(os.Getenv(lifeHostEnv)))
	}
}

// lifePlugin has a sink that creates its output under a temporary name in
// Begin and removes it in Abort.
func lifePlugin() *plugin.Plugin {
	type cfg struct {
		Path string `hcl:"path"`
	}
	return &plugin.Plugin{Name: "life", Version: "1.0.0", Sinks: []plugin.SinkType{
		plugin.NewSinkType("held", "holds a temporary file", func(ctx context.Context, c *cfg) (plugin.Sink, error) {
			return &heldSink{path: c.Path}, nil
		}),
	}}
}

type heldSink struct {
	path string
	f    *atomicfile.File
}

func (s *heldSink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	return &plugin.SinkPlan{}, nil
}
func (s *heldSink) Begin(ctx context.Context, m *tensor.Manifest, _ plugin.BeginOptions) (err error) {
	s.f, err = atomicfile.Create(s.path, 0)
	return err
}
func (s *heldSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	_, err := io.Copy(io.Discard, data)
	return err
}
func (s *heldSink) Commit(ctx context.Context) ([]plugin.Artifact, error) { return nil, s.f.Commit() }
func (s *heldSink) Abort(ctx context.Context) error                       { return s.f.Abort() }

// lifeHost starts the plugin, begins a sink writing path, prints the
// plugin's pid and waits forever.
func lifeHost(path string) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lifeServeEnv+"=1", lifeHostEnv+"=")
	c, err := plugin.Launch(plugin.LaunchConfig{Cmd: cmd, Label: "plugin life", StartTimeout: 30 * time.Second})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ctx := context.Background()
	sk, err := c.OpenSink(ctx, "held", plugin.MustConfig(map[string]any{"path": path}))
	if err == nil {
		err = sk.Begin(ctx, &tensor.Manifest{}, plugin.BeginOptions{})
	}
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("READY", c.Pid())
	select {}
}

// startLifeHost runs the host and returns it with the plugin's pid.
func startLifeHost(t *testing.T, path string) (*exec.Cmd, int) {
	t.Helper()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), lifeHostEnv+"="+path)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "READY ")))
	if !strings.HasPrefix(line, "READY ") || err != nil {
		t.Fatalf("the host did not start its plugin: %q", line)
	}
	return host, pid
}

func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if atomicfile.IsTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// gone waits up to d for pid to stop running.
func gone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return true
		}
		// A zombie waiting for its reaper has stopped running too.
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return true
			}
		}
	}
	return false
}

// TestPluginOutlivesNoHost is a regression test: a plugin process whose host
// was killed (SIGKILL, so it could not stop its plugins) went on running,
// holding its temporary files under its own live pid, so no later run could
// remove them. It now notices, aborts its sinks and exits.
func TestPluginOutlivesNoHost(t *testing.T) {
	dir := t.TempDir()
	host, pid := startLifeHost(t, filepath.Join(dir, "out.bin"))
	if len(temps(t, dir)) != 1 {
		t.Fatalf("the sink holds no temporary file: %v", temps(t, dir))
	}
	host.Process.Kill()
	host.Wait()
	if !gone(pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the plugin (pid %d) still runs after its host was killed", pid)
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Errorf("the plugin exited without aborting its sink: %v left", left)
	}
}

// TestPluginStopsOnSIGTERM: a plugin told to terminate aborts its sinks
// first (built-in plugins used to ignore SIGTERM, which the CLI's own
// handler caught).
func TestPluginStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	_, pid := startLifeHost(t, filepath.Join(dir, "out.bin"))
	syscall.Kill(pid, syscall.SIGTERM)
	if !gone(pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the plugin (pid %d) ignored SIGTERM", pid)
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Errorf("the plugin exited without aborting its sink: %v left", left)
	}
}
