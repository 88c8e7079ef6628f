package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/core/digestcache"
	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// copySample copies the shipped sample checkpoint into a new directory.
func copySample(t *testing.T, dir string) string {
	t.Helper()
	src := sampleDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Old enough that its time proves something (see run.racyWindow).
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(dir, e.Name()), old, old)
	}
	return dir
}

var sampleDirOnce struct {
	sync.Once
	dir string
}

// sampleDir returns the shipped sample's directory, found once (tests may
// change the working directory later).
func sampleDir(t *testing.T) string {
	sampleDirOnce.Do(func() { sampleDirOnce.dir = filepath.Join(repoRoot(t), "testdata", "sample") })
	return sampleDirOnce.dir
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	sum, err := host.FileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func readRunManifest(t *testing.T, p string) *run.Manifest {
	t.Helper()
	m, err := run.ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mustRun runs sluice and fails the test on a non-zero exit.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := sluice(t, args...)
	if code != 0 {
		t.Fatalf("sluice %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// withoutManifests drops run manifests, which record times and paths, from a
// listing of outputs.
func withoutManifests(files map[string][]byte) map[string][]byte {
	for name := range files {
		if strings.HasSuffix(name, run.ManifestSuffix) {
			delete(files, name)
		}
	}
	return files
}

func TestRunManifestRecordsTheRun(t *testing.T) {
	const secret = "ci-secret-1b7c4e"
	t.Setenv("SLUICE_VAR_signing_key", secret)
	pipe := filepath.Join(repoRoot(t), "pipelines", "ci-artifact")
	model := copySample(t, filepath.Join(t.TempDir(), "model"))
	out := t.TempDir()
	mustRun(t, "run", pipe, "-var", "out_dir="+out, "-var", "model_dir="+model, "--quiet")

	var validated struct{ Digest string }
	vout := mustRun(t, "validate", pipe, "-var", "out_dir="+out, "-var", "model_dir="+model, "--json")
	if err := json.Unmarshal([]byte(vout), &validated); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	exeSum := fileSHA256(t, exe)

	listed := map[string]bool{}
	for _, name := range []string{"sample-q8_0.gguf" + run.ManifestSuffix, filepath.Join("safetensors", "model.safetensors"+run.ManifestSuffix)} {
		path := filepath.Join(out, name)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("no run manifest: %v", err)
		}
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("%s contains the signing key", name)
		}
		m := readRunManifest(t, path)
		if m.Pipeline.Digest != validated.Digest {
			t.Errorf("%s: pipeline digest %s, validate says %s", name, m.Pipeline.Digest, validated.Digest)
		}
		if string(m.Pipeline.Variables["signing_key"]) != run.Redacted || m.Pipeline.Sensitive == "" {
			t.Errorf("%s: the sensitive variable reads %s (fingerprint %q)", name, m.Pipeline.Variables["signing_key"], m.Pipeline.Sensitive)
		}
		var outDir string
		json.Unmarshal(m.Pipeline.Variables["out_dir"], &outDir)
		if outDir != out {
			t.Errorf("%s: out_dir recorded as %s", name, m.Pipeline.Variables["out_dir"])
		}
		if m.Sluice != version || m.SluiceSHA256 != exeSum {
			t.Errorf("%s: sluice %s %s, want %s %s", name, m.Sluice, m.SluiceSHA256, version, exeSum)
		}
		if m.Started.IsZero() || m.Finished.Before(m.Started) {
			t.Errorf("%s: started %v, finished %v", name, m.Started, m.Finished)
		}
		entries, _ := os.ReadDir(model)
		if len(m.Inputs) != len(entries) {
			t.Errorf("%s: %d inputs recorded, the model directory has %d files", name, len(m.Inputs), len(entries))
		}
		for _, in := range m.Inputs {
			fi, err := os.Stat(in.Path)
			if err != nil || filepath.Dir(in.Path) != model {
				t.Errorf("%s: input %s is not a file of the model directory", name, in.Path)
				continue
			}
			if in.Size != uint64(fi.Size()) || in.SHA256 != fileSHA256(t, in.Path) || in.ModTime == "" {
				t.Errorf("%s: input %s recorded as %d bytes, sha256 %s, mtime %q", name, in.Path, in.Size, in.SHA256, in.ModTime)
			}
		}
		plugins := map[string]run.PluginRecord{}
		for _, p := range m.Plugins {
			plugins[p.Name] = p
		}
		for _, want := range []string{"gguf", "safetensors"} {
			p, ok := plugins[want]
			if !ok || !p.Builtin || p.SHA256 != exeSum || p.Version == "" || p.Protocol != fmt.Sprintf("%d.%d", plugin.ProtocolVersion, plugin.ProtocolMinor) {
				t.Errorf("%s: plugin %s recorded as %+v", name, want, p)
			}
		}
		for _, o := range m.Outputs {
			p := filepath.Join(filepath.Dir(path), filepath.FromSlash(o.Path))
			fi, err := os.Stat(p)
			if err != nil || uint64(fi.Size()) != o.Size || o.SHA256 != fileSHA256(t, p) {
				t.Errorf("%s: output %s recorded as %d bytes, sha256 %s", name, o.Path, o.Size, o.SHA256)
			}
			rel, _ := filepath.Rel(out, p)
			listed[rel] = true
		}
	}
	for name := range withoutManifests(listFiles(t, out)) {
		if !listed[name] {
			t.Errorf("%s was written but no run manifest lists it", name)
		}
	}
}

func TestSkipUnchanged(t *testing.T) {
	root := t.TempDir()
	model := copySample(t, filepath.Join(root, "model"))
	pipeDir := filepath.Join(root, "pipeline")
	os.MkdirAll(pipeDir, 0o755)
	src, _ := os.ReadFile(filepath.Join(repoRoot(t), "pipelines", "ci-artifact", "pipeline.hcl"))
	pipe := filepath.Join(pipeDir, "pipeline.hcl")
	os.WriteFile(pipe, src, 0o644)
	out := filepath.Join(root, "dist")
	t.Setenv("SLUICE_VAR_signing_key", "key-one")
	args := []string{"run", pipe, "-var", "out_dir=" + out, "-var", "model_dir=" + model, "--skip-unchanged"}
	gguf := filepath.Join(out, "sample-q8_0.gguf")

	skips := func(t *testing.T) {
		t.Helper()
		before, _ := os.Stat(gguf)
		start := time.Now()
		stdout := mustRun(t, args...)
		t.Logf("the check took %v", time.Since(start))
		if !strings.Contains(stdout, "Nothing to do") {
			t.Fatalf("the run was not skipped:\n%s", stdout)
		}
		if after, _ := os.Stat(gguf); !after.ModTime().Equal(before.ModTime()) {
			t.Fatalf("a skipped run rewrote %s", gguf)
		}
	}
	runs := func(t *testing.T, reason string) {
		t.Helper()
		stdout := mustRun(t, args...)
		if !strings.Contains(stdout, "Running: ") || !strings.Contains(stdout, reason) || !strings.Contains(stdout, "wrote ") {
			t.Fatalf("want a run because %q:\n%s", reason, stdout)
		}
	}

	runs(t, "there is no run manifest")
	skips(t)

	// A touched input is read again; same bytes, so nothing to do, and the
	// manifest remembers the new time.
	cfg := filepath.Join(model, "config.json")
	touched := time.Now().Add(-30 * time.Minute).Round(time.Second)
	os.Chtimes(cfg, touched, touched)
	skips(t)
	for _, in := range readRunManifest(t, gguf+run.ManifestSuffix).Inputs {
		if in.Path == cfg && in.ModTime != touched.UTC().Format(time.RFC3339Nano) {
			t.Errorf("the manifest still records mtime %s for the touched input", in.ModTime)
		}
	}

	// Same size, other bytes.
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte("{\n"), []byte(" {"), 1), 0o644)
	runs(t, "config.json changed (its SHA-256 differs)")
	os.WriteFile(cfg, b, 0o644)
	runs(t, "config.json changed")

	os.WriteFile(filepath.Join(model, "README.md"), []byte("new file\n"), 0o644)
	runs(t, "README.md is new")
	skips(t)

	t.Setenv("SLUICE_VAR_signing_key", "key-two")
	runs(t, "a sensitive variable has another value")
	skips(t)

	os.WriteFile(pipe, append(src, "\n# edited\n"...), 0o644)
	runs(t, "the pipeline changed")

	g, _ := os.ReadFile(gguf)
	os.WriteFile(gguf, append(g, 0), 0o644)
	runs(t, "sample-q8_0.gguf was modified after the run")
	os.Remove(filepath.Join(out, "safetensors", "config.json"))
	runs(t, "config.json is missing")
	skips(t)
}

// The same pipeline over copies of the same checkpoint, from other working
// directories and other output directories, writes the same bytes: no
// absolute path, time or directory name reaches an output.
func TestOutputsDoNotDependOnDirectories(t *testing.T) {
	root := repoRoot(t)
	sampleDir(t)
	for _, name := range []string{"quickstart", "ci-artifact", "sign-and-shard"} {
		t.Run(name, func(t *testing.T) {
			pipe := filepath.Join(root, "pipelines", name)
			var runs []map[string][]byte
			var dirs []string
			for i, sub := range []string{"a", filepath.Join("b", "deeper", "c")} {
				base := filepath.Join(t.TempDir(), sub)
				model := copySample(t, filepath.Join(base, "checkpoint"))
				work := filepath.Join(base, "work")
				os.MkdirAll(work, 0o755)
				t.Chdir(work)
				args := []string{"run", pipe, "-var", "out_dir=out", "-var", "model_dir=" + model, "--quiet"}
				if i == 1 {
					args = append(args, "--in-process", "--workers", "1")
				}
				mustRun(t, args...)
				runs = append(runs, withoutManifests(listFiles(t, filepath.Join(work, "out"))))
				dirs = append(dirs, base)
			}
			if len(runs[0]) == 0 || len(runs[0]) != len(runs[1]) {
				t.Fatalf("the runs wrote %d and %d files", len(runs[0]), len(runs[1]))
			}
			for file, b := range runs[0] {
				if !bytes.Equal(runs[1][file], b) {
					t.Errorf("%s differs between the runs", file)
				}
				for _, d := range dirs {
					if bytes.Contains(b, []byte(d)) {
						t.Errorf("%s names the directory %s", file, d)
					}
				}
			}
		})
	}
}

// The nightly job: prepare the f16 GGUF, re-quantize, gate on drift, and
// skip when nothing changed.
func TestNightlyRequantization(t *testing.T) {
	root := repoRoot(t)
	pipe := filepath.Join(root, "pipelines", "nightly-requant")
	out := t.TempDir()
	mustRun(t, "run", filepath.Join(pipe, "prepare"), "-var", "out_dir="+out, "--quiet")
	mustRun(t, "run", pipe, "-var", "out_dir="+out, "--skip-unchanged", "--quiet")
	f16 := filepath.Join(out, "input", "sample-f16.gguf")
	for _, tc := range []struct {
		file   string
		cosine string
	}{{"sample-Q8_0.gguf", "0.999"}, {"sample-Q4_K_M.gguf", "0.99"}} {
		if _, stderr, code := sluice(t, "diff", f16, filepath.Join(out, tc.file), "--min-cosine", tc.cosine, "--quiet"); code != 0 {
			t.Errorf("drift gate on %s (min cosine %s): exit %d\n%s", tc.file, tc.cosine, code, stderr)
		}
	}
	// The gate does fail: Q4_K_M is not within 1e-6 of f16.
	if _, _, code := sluice(t, "diff", f16, filepath.Join(out, "sample-Q4_K_M.gguf"), "--min-cosine", "0.999999", "--quiet"); code != 4 {
		t.Errorf("a drift gate past Q4_K_M's precision passed (exit %d)", code)
	}
	if stdout := mustRun(t, "run", pipe, "-var", "out_dir="+out, "--skip-unchanged"); !strings.Contains(stdout, "Nothing to do") {
		t.Errorf("the second nightly run did work:\n%s", stdout)
	}
	q := readRunManifest(t, filepath.Join(out, "sample-Q4_K_M.gguf"+run.ManifestSuffix))
	if len(q.Inputs) != 1 || q.Inputs[0].Path != f16 || q.Inputs[0].SHA256 != fileSHA256(t, f16) {
		t.Errorf("the nightly manifest records inputs %+v", q.Inputs)
	}
}

// The CI artifact pipeline's outputs verify with the key and fail with
// another one.
func TestCIArtifact(t *testing.T) {
	pipe := filepath.Join(repoRoot(t), "pipelines", "ci-artifact")
	out := t.TempDir()
	t.Setenv("SLUICE_VAR_signing_key", "release-key")
	mustRun(t, "run", pipe, "-var", "out_dir="+out, "--quiet")
	for _, p := range []string{filepath.Join(out, "sample-q8_0.gguf"), filepath.Join(out, "safetensors")} {
		if _, stderr, code := sluice(t, "verify", p, "--key", "release-key", "--quiet"); code != 0 {
			t.Errorf("verify %s: exit %d\n%s", p, code, stderr)
		}
		if _, _, code := sluice(t, "verify", p, "--key", "another-key", "--quiet"); code != exitBadInput {
			t.Errorf("verify %s with the wrong key: exit %d, want %d", p, code, exitBadInput)
		}
	}
}

// TestRecordedDigestsAreTheOutputs runs every built-in writer, sharded and
// not, in and out of process, with and without --fsync=false, and checks
// that each digest the run manifests record — computed by the sinks while
// they wrote (protocol 1.2), or out of process by the host for the files it
// writes into (1.9) — is the SHA-256 of the file on disk, and that every
// mode writes the same bytes.
func TestRecordedDigestsAreTheOutputs(t *testing.T) {
	model := copySample(t, filepath.Join(t.TempDir(), "model"))
	var first map[string][]byte
	for _, mode := range []string{"out of process", "in-process", "out of process, --fsync=false", "in-process, --fsync=false"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			pipe := filepath.Join(t.TempDir(), "pipeline.hcl")
			src := fmt.Sprintf(`
source "safetensors" "in" {
  path = %q
}
transform "shard" "small" {
  input    = source.in
  max_size = "100KB"
}
transform "quantize" "q8" {
  input = source.in
  type  = "q8_0"
}
sink "safetensors" "st" {
  input = transform.small
  path  = "%[2]s/st/model.safetensors"
}
sink "gguf" "split" {
  input = transform.small
  path  = "%[2]s/gguf/model.gguf"
}
sink "gguf" "q8" {
  input = transform.q8
  path  = "%[2]s/q8/model.gguf"
}
sink "apsim" "set" {
  input = transform.small
  path  = "%[2]s/apsim/model.apsim"
}
sink "apr" "apr" {
  input = source.in
  path  = "%[2]s/apr/model.apr"
}
`, model, out)
			if err := os.WriteFile(pipe, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", pipe, "--quiet"}
			if strings.HasPrefix(mode, "in-process") {
				args = append(args, "--in-process")
			}
			if strings.HasSuffix(mode, "--fsync=false") {
				args = append(args, "--fsync=false")
			}
			mustRun(t, args...)
			files := withoutManifests(listFiles(t, out))
			if first == nil {
				first = files
			} else if !maps.EqualFunc(first, files, bytes.Equal) {
				t.Errorf("the outputs differ from the first mode's")
			}
			manifests, _ := filepath.Glob(filepath.Join(out, "*", "*"+run.ManifestSuffix))
			if len(manifests) != 5 {
				t.Fatalf("%d run manifests, want one per sink: %v", len(manifests), manifests)
			}
			checked := 0
			for _, mp := range manifests {
				m := readRunManifest(t, mp)
				for _, o := range m.Outputs {
					p := o.Path
					if !filepath.IsAbs(p) {
						p = filepath.Join(filepath.Dir(mp), p)
					}
					if got := fileSHA256(t, p); got != o.SHA256 {
						t.Errorf("%s records %s for %s, the file's SHA-256 is %s", mp, o.SHA256, o.Path, got)
					}
					checked++
				}
			}
			if checked < 12 {
				t.Errorf("only %d outputs recorded; the sharded sinks should write several files each", checked)
			}
		})
	}
}

// A second conversion of a checkpoint, by another pipeline to another
// output, takes the input's digest from the user's input digest cache
// instead of reading the file: the test changes the input's bytes but keeps
// its size and time, which only a digest from the cache misses. With
// --digest-cache=false the run reads the file.
func TestInputDigestCacheServesEveryPipeline(t *testing.T) {
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	model := copySample(t, filepath.Join(t.TempDir(), "model"))
	input := filepath.Join(model, "model-00002-of-00002.safetensors")
	before := fileSHA256(t, input)
	dir := t.TempDir()
	pipeline := func(sink, out string) string { return writePipeline(t, copyPipeline(input, sink, out)) }
	recorded := func(out string) string {
		m := readRunManifest(t, out+run.ManifestSuffix)
		for _, r := range m.Inputs {
			if r.Path == input {
				return r.SHA256
			}
		}
		t.Fatalf("%s: no record of %s in %+v", out, input, m.Inputs)
		return ""
	}

	first := filepath.Join(dir, "first", "model.safetensors")
	mustRun(t, "run", pipeline("safetensors", first), "--quiet")
	if got := recorded(first); got != before {
		t.Fatalf("the first run recorded %s, the file's SHA-256 is %s", got, before)
	}
	if _, err := os.Stat(filepath.Join(cacheHome, "sluice", digestcache.FileName)); err != nil {
		t.Fatalf("no input digest cache after the first run: %v", err)
	}

	// Change a byte of the tensor data; keep the size and the time.
	fi, err := os.Stat(input)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x01
	if err := os.WriteFile(input, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(input, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after := fileSHA256(t, input)

	second := filepath.Join(dir, "second", "model.gguf")
	mustRun(t, "run", pipeline("gguf", second), "--quiet")
	if got := recorded(second); got != before {
		t.Errorf("another pipeline recorded %s; the cache held %s (the file now hashes to %s)", got, before, after)
	}
	third := filepath.Join(dir, "third", "model.gguf")
	mustRun(t, "run", pipeline("gguf", third), "--quiet", "--digest-cache=false")
	if got := recorded(third); got != after {
		t.Errorf("with --digest-cache=false the run recorded %s, the file hashes to %s", got, after)
	}
}

// The digest of the sluice binary a run is recorded with comes from the
// digest cache while the binary keeps its size and time, so a run, or a
// --skip-unchanged check, does not read the whole binary each time.
func TestBinaryDigestComesFromTheCache(t *testing.T) {
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	cacheFile := filepath.Join(cacheHome, "sluice", digestcache.FileName)
	store, err := digestcache.Load(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	planted := strings.Repeat("ab", 32) // not the binary's digest: only the cache can say it
	store.Record(exe, digestcache.Entry{Size: uint64(fi.Size()), ModTime: fi.ModTime().UTC().Format(time.RFC3339Nano), SHA256: planted})
	if err := store.Save(); err != nil {
		t.Fatal(err)
	}
	model := copySample(t, filepath.Join(t.TempDir(), "model"))
	input := filepath.Join(model, "model-00002-of-00002.safetensors")
	out := filepath.Join(t.TempDir(), "out", "model.safetensors")
	pipeline := writePipeline(t, copyPipeline(input, "safetensors", out))

	mustRun(t, "run", pipeline, "--quiet")
	if got := readRunManifest(t, out+run.ManifestSuffix).SluiceSHA256; got != planted {
		t.Errorf("the run recorded the sluice binary as %s; the cache holds %s for it", got, planted)
	}
	after, err := digestcache.Load(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := after.Files[exe]; !ok || e.SHA256 != planted {
		t.Errorf("after the run the cache holds %+v for the sluice binary, want its entry kept", e)
	}

	mustRun(t, "run", pipeline, "--quiet", "--digest-cache=false")
	if got, want := readRunManifest(t, out+run.ManifestSuffix).SluiceSHA256, fileSHA256(t, exe); got != want {
		t.Errorf("with --digest-cache=false the run recorded the sluice binary as %s, it hashes to %s", got, want)
	}
}

// A damaged input digest cache is reported, does not fail the run, and is
// replaced by one that holds the run's inputs.
func TestDamagedInputDigestCacheIsReplaced(t *testing.T) {
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	cacheFile := filepath.Join(cacheHome, "sluice", digestcache.FileName)
	if err := os.MkdirAll(filepath.Dir(cacheFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cacheFile, []byte(`{"version": 1, "files": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	model := copySample(t, filepath.Join(t.TempDir(), "model"))
	out := filepath.Join(t.TempDir(), "out.safetensors")
	p := writePipeline(t, copyPipeline(filepath.Join(model, "model-00002-of-00002.safetensors"), "safetensors", out))
	_, stderr, code := sluice(t, "run", p, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning") || !strings.Contains(stderr, cacheFile) {
		t.Errorf("the damaged cache was not reported:\n%s", stderr)
	}
	b, err := os.ReadFile(cacheFile)
	if err != nil || !bytes.Contains(b, []byte(filepath.Join(model, "model-00002-of-00002.safetensors"))) {
		t.Errorf("the cache was not replaced: %v\n%s", err, b)
	}
}

// copyPipeline is a pipeline that copies the safetensors file input to out
// through a sink of the given type.
func copyPipeline(input, sink, out string) string {
	return fmt.Sprintf("source \"safetensors\" \"in\" {\n  path = %q\n}\nsink %q \"out\" {\n  input = source.in\n  path  = %q\n}\n", input, sink, out)
}
