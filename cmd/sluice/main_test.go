package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/internal/refdata"
	"github.com/sluice-ml/sluice/internal/standby"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestMain lets the test binary stand in for the sluice binary: built-in
// plugins are served by re-executing os.Executable() as
// `plugin serve NAME`, which lands here.
func TestMain(m *testing.M) {
	if standby.IsChild(os.Args[1:]) {
		// A process started ahead by a run of this binary as the CLI.
		os.Exit(runMain(awaitIfStandby(os.Args[1:]), os.Stdout, os.Stderr))
	}
	if os.Getenv(plugin.Handshake.MagicCookieKey) != "" && len(os.Args) > 2 && os.Args[1] == "plugin" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	pinGoBuildCache()
	// Runs add the inputs they hash to the user's input digest cache: keep
	// the tests' own, and out of the user's.
	cache, err := os.MkdirTemp("", "sluice-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	cleanupFixtures()
	os.RemoveAll(cache)
	os.Exit(code)
}

// pinGoBuildCache names Go's build cache in GOCACHE, as the go command
// finds it now, before TestMain moves XDG_CACHE_HOME: the go builds and
// tests some tests run (the sluice binary, example and test plugins) would
// otherwise find an empty cache under the tests' own and build every
// package again (70 s of CI on a fresh machine for the sluice binary)
// instead of reusing what go test compiled. Without a go command there is
// nothing to pin; those tests skip.
func pinGoBuildCache() {
	if os.Getenv("GOCACHE") != "" {
		return
	}
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" && dir != "off" {
			os.Setenv("GOCACHE", dir)
		}
	}
}

func init() {
	builtins = append(builtins, host.Builtin{Name: "crashy", New: crashyPlugin})
}

// sluice runs the CLI in this process (plugins still run as processes unless
// --in-process is given) and returns its output and exit code.
func sluice(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

// crashyPlugin is a test plugin whose sink dies while writing: with mode
// "panic" it panics, with "exit" the process exits. With "direct-panic" and
// "direct-exit" it offers the host every tensor to write in place (protocol
// 1.7) and dies when told one was written.
func crashyPlugin() *plugin.Plugin {
	type cfg struct {
		Path string `hcl:"path"`
		Mode string `hcl:"mode"`
	}
	return &plugin.Plugin{Name: "crashy", Version: "0.0.1", Sinks: []plugin.SinkType{
		plugin.NewSinkType("crashy", "A sink that crashes, for tests.", func(ctx context.Context, c *cfg) (plugin.Sink, error) {
			if mode, ok := strings.CutPrefix(c.Mode, "direct-"); ok {
				return &directCrashySink{crashySink{path: c.Path, mode: mode}, nil}, nil
			}
			return &crashySink{path: c.Path, mode: c.Mode}, nil
		}),
	}}
}

type crashySink struct {
	path string
	mode string
	f    *atomicfile.File
}

func (s *crashySink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	return &plugin.SinkPlan{Files: []plugin.PlannedFile{{Path: s.path}}}, nil
}

func (s *crashySink) Begin(ctx context.Context, m *tensor.Manifest, _ plugin.BeginOptions) error {
	f, err := atomicfile.Create(s.path, 1024)
	s.f = f
	return err
}

func (s *crashySink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	io.Copy(io.Discard, data)
	s.crash(name)
	return nil
}

func (s *crashySink) crash(name string) {
	fmt.Fprintln(os.Stderr, "crashy: about to fail while writing", name)
	if s.mode == "exit" {
		os.Exit(7)
	}
	panic("crashy sink gave up on " + name)
}

// directCrashySink lays the tensors out back to back and offers them all.
type directCrashySink struct {
	crashySink
	targets []plugin.DirectTarget
}

func (s *directCrashySink) Begin(ctx context.Context, m *tensor.Manifest, _ plugin.BeginOptions) error {
	var size uint64
	for _, t := range m.Tensors {
		s.targets = append(s.targets, plugin.DirectTarget{Tensor: t.Name, Offset: size, Size: t.Size})
		size += t.Size
	}
	f, err := atomicfile.Create(s.path, int64(size))
	s.f = f
	for i := range s.targets {
		s.targets[i].File = f
	}
	return err
}

func (s *directCrashySink) DirectTargets() []plugin.DirectTarget { return s.targets }

// Write is never called: the host writes every tensor itself.
func (s *directCrashySink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	return fmt.Errorf("tensor %q came to Write, not written in place", name)
}

func (s *directCrashySink) WrittenDirect(name string) error {
	s.crash(name)
	return nil
}

func (s *crashySink) Commit(ctx context.Context) ([]plugin.Artifact, error) { return nil, nil }

func (s *crashySink) Abort(ctx context.Context) error {
	if s.f != nil {
		return s.f.Abort()
	}
	return nil
}

// repoRoot returns the module root (the directory of go.mod).
func repoRoot(t *testing.T) string {
	t.Helper()
	return refdata.ModuleRoot(t)
}

// listFiles returns every file under dir, relative, with its bytes.
func listFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return nil
	})
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func TestEveryPipelineRuns(t *testing.T) {
	root := repoRoot(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "pipelines", "*"))
	if len(dirs) == 0 {
		t.Fatal("no pipelines")
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		for _, mode := range []string{"out-of-process", "in-process"} {
			t.Run(filepath.Base(dir)+"/"+mode, func(t *testing.T) {
				out := t.TempDir()
				args := []string{"run", dir, "-var", "out_dir=" + out, "--quiet"}
				if mode == "in-process" {
					args = append(args, "--in-process")
				}
				// A pipeline whose input another pipeline makes has that
				// one in prepare/, run first with the same out_dir.
				if prep := filepath.Join(dir, "prepare"); isDir(prep) {
					if _, stderr, code := sluice(t, append([]string{"run", prep}, args[2:]...)...); code != 0 {
						t.Fatalf("prepare: exit %d:\n%s", code, stderr)
					}
				}
				_, stderr, code := sluice(t, args...)
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, stderr)
				}
				files := listFiles(t, out)
				if len(files) == 0 {
					t.Fatal("the pipeline wrote nothing")
				}
				for name := range files {
					if strings.Contains(name, ".sluice-tmp-") {
						t.Errorf("temporary file %s left behind", name)
					}
				}
			})
		}
	}
}

func TestRunsAreReproducible(t *testing.T) {
	root := repoRoot(t)
	qs := filepath.Join(root, "pipelines", "quickstart")
	var runs []map[string][]byte
	for i, extra := range [][]string{nil, {"--in-process"}, {"--workers", "1"}} {
		out := filepath.Join(t.TempDir(), fmt.Sprintf("run%d", i))
		args := append([]string{"run", qs, "-var", "out_dir=" + out, "--quiet"}, extra...)
		if _, stderr, code := sluice(t, args...); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		// Run manifests record times and paths; the outputs they list must
		// not.
		runs = append(runs, withoutManifests(listFiles(t, out)))
	}
	for i := 1; i < len(runs); i++ {
		if len(runs[i]) != len(runs[0]) {
			t.Fatalf("run %d wrote %d files, run 0 wrote %d", i, len(runs[i]), len(runs[0]))
		}
		for name, b := range runs[0] {
			if !bytes.Equal(runs[i][name], b) {
				t.Errorf("run %d: %s differs from run 0", i, name)
			}
		}
	}
}

func writePipeline(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "pipeline.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigErrorsAreDiagnosedAtTheirLine(t *testing.T) {
	sampleDir := filepath.Join(repoRoot(t), "testdata", "sample")
	head := fmt.Sprintf("source \"safetensors\" \"hf\" {\n  path = %q\n}\n", sampleDir)
	for _, tc := range []struct {
		name string
		body string
		want []string
	}{
		{"typo in a plugin attribute", head + "sink \"safetensors\" \"out\" {\n  input = source.hf\n  pth = \"x\"\n}\n",
			[]string{"pipeline.hcl line 6", `Did you mean "path"?`}},
		{"undeclared reference", head + "sink \"safetensors\" \"out\" {\n  input = source.hff\n  path = \"x\"\n}\n",
			[]string{"pipeline.hcl line 5", "Reference to undeclared stage", `Did you mean "source.hf"?`}},
		{"unknown stage type", head + "sink \"safetensor\" \"out\" {\n  input = source.hf\n  path = \"x\"\n}\n",
			[]string{"pipeline.hcl line 4", `Did you mean "safetensors"?`}},
		{"wrong attribute type", head + "sink \"safetensors\" \"out\" {\n  input = source.hf\n  path = [1, 2]\n}\n",
			[]string{"pipeline.hcl line 6", "Incorrect attribute value type"}},
		{"missing required attribute", head + "sink \"safetensors\" \"out\" {\n  input = source.hf\n}\n",
			[]string{"pipeline.hcl line 4", `"path" is required`}},
		{"cycle", head + "transform \"shard\" \"a\" {\n  input = transform.b\n  max_size = \"1GB\"\n}\ntransform \"shard\" \"b\" {\n  input = transform.a\n  max_size = \"1GB\"\n}\n",
			[]string{"Cycle between stages", "transform.a", "transform.b"}},
		{"missing variable", "variable \"model_dir\" { type = string }\n" + head,
			[]string{"No value for required variable", "SLUICE_VAR_model_dir"}},
		{"failed validation", "variable \"n\" {\n  type = number\n  default = 3\n  validation {\n    condition = var.n > 5\n    error_message = \"n must exceed 5.\"\n  }\n}\n" + head,
			[]string{"n must exceed 5.", "pipeline.hcl line 5"}},
		{"plugin-side config error", head + "sink \"safetensors\" \"out\" {\n  input = source.hf\n  path = \"x.safetensors\"\n  dtype = \"q8_0\"\n}\n",
			[]string{"pipeline.hcl line 7", "dtype"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writePipeline(t, tc.body)
			_, stderr, code := sluice(t, "plan", p)
			if code != exitBadConfig {
				t.Fatalf("exit %d, want %d:\n%s", code, exitBadConfig, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("diagnostic lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestVariablesFromFlagsFilesAndEnvironment(t *testing.T) {
	sampleDir := filepath.Join(repoRoot(t), "testdata", "sample")
	p := writePipeline(t, fmt.Sprintf(`
variable "shard" { type = string }
variable "secret" {
  type      = string
  sensitive = true
  default   = "not-this"
}
source "safetensors" "hf" { path = %q }
transform "shard" "s" {
  input    = source.hf
  max_size = var.shard
}
sink "safetensors" "out" {
  input = transform.s
  path  = "${path.root}/out/m.safetensors"
}
`, sampleDir))
	varFile := filepath.Join(filepath.Dir(p), "x.sluicevars.hcl")
	os.WriteFile(varFile, []byte(`shard = "100KB"`+"\n"), 0o644)
	t.Setenv("SLUICE_VAR_shard", "1KB")
	// The flag wins over the file, which wins over the environment.
	out, stderr, code := sluice(t, "plan", p, "-var-file", varFile, "-var", "shard=150KB")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(out, "shard 1/2") || strings.Contains(out, "shard 3/") {
		t.Errorf("max_size 150KB should make two shards:\n%s", out)
	}
	out, _, _ = sluice(t, "plan", p, "-var-file", varFile)
	if !strings.Contains(out, "shard 3/3") {
		t.Errorf("max_size 100KB from the var file should make three shards:\n%s", out)
	}
	out, _, _ = sluice(t, "plan", p)
	if !strings.Contains(out, "/21") && !strings.Contains(out, "shard 1/") {
		t.Errorf("environment value not used:\n%s", out)
	}
	_, stderr, code = sluice(t, "plan", p, "-var", "shrad=1KB")
	if code != exitBadConfig || !strings.Contains(stderr, `Did you mean "shard"?`) {
		t.Errorf("undeclared -var: exit %d\n%s", code, stderr)
	}
}

func TestBadInputExitCode(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	// A header length that claims more than the file holds.
	os.WriteFile(bad, []byte{0xff, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 0o644)
	_, stderr, code := sluice(t, "info", bad)
	if code != exitBadInput && code != exitBadConfig {
		t.Fatalf("exit %d, want %d:\n%s", code, exitBadInput, stderr)
	}
	out := filepath.Join(dir, "out.safetensors")
	good := filepath.Join(repoRoot(t), "testdata", "sample", "model-00001-of-00002.safetensors")
	b, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "trunc.safetensors")
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	_, stderr, code = sluice(t, "convert", trunc, out, "--quiet")
	if code != exitBadInput {
		t.Fatalf("convert of a truncated file: exit %d, want %d:\n%s", code, exitBadInput, stderr)
	}
	if !strings.Contains(stderr, "trunc.safetensors") {
		t.Errorf("the error does not name the file:\n%s", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output exists after a failed run")
	}
}

func TestPluginCrashIsReportedAndLeavesNothing(t *testing.T) {
	sampleDir := filepath.Join(repoRoot(t), "testdata", "sample")
	for _, mode := range []string{"panic", "exit", "direct-panic", "direct-exit"} {
		t.Run(mode, func(t *testing.T) {
			outDir := t.TempDir()
			p := writePipeline(t, fmt.Sprintf(`
source "safetensors" "hf" { path = %q }
sink "crashy" "boom" {
  input = source.hf
  path  = "%s/boom.bin"
  mode  = %q
}
sink "safetensors" "ok" {
  input = source.hf
  path  = "%s/ok.safetensors"
}
`, sampleDir, outDir, mode, outDir))
			_, stderr, code := sluice(t, "run", p, "--quiet")
			if code != exitInternal {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInternal, stderr)
			}
			for _, w := range []string{`plugin "crashy"`, "sink.boom", "crashed or was killed"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("crash report lacks %q:\n%s", w, stderr)
				}
			}
			if strings.HasSuffix(mode, "panic") && !strings.Contains(stderr, "panic: crashy sink gave up") {
				t.Errorf("crash report does not quote the panic:\n%s", stderr)
			}
			if strings.HasSuffix(mode, "exit") && !strings.Contains(stderr, "exit status 7") {
				t.Errorf("crash report does not give the exit status:\n%s", stderr)
			}
			entries, _ := os.ReadDir(outDir)
			for _, e := range entries {
				t.Errorf("left behind after the crash: %s", e.Name())
			}
		})
	}
}

// The go commands the tests run find the build cache go test filled, not an
// empty one under the tests' own XDG_CACHE_HOME.
func TestGoCommandsUseTheUsersBuildCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	testsCache := os.Getenv("XDG_CACHE_HOME")
	if got := strings.TrimSpace(string(out)); testsCache != "" && strings.HasPrefix(got, testsCache) {
		t.Errorf("go commands build into %s, under the tests' cache %s", got, testsCache)
	}
}
