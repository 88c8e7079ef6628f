package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/core/run"
)

// goBuild builds a main package into a temporary directory and returns the
// binary: pkg is relative to dir, the directory of its module (this
// package's directory when empty).
func goBuild(t *testing.T, dir, pkg, name string, ldflags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build test binaries")
	}
	bin := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", bin}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// partitionPipeline covers every case of a partitioned run: a safetensors
// shard set with detached signatures (split between partitions, its index,
// side files and their signatures written by finalize), an apsim set with
// its embedded signature (its signed index written by finalize), a GGUF
// split set (split, nothing to finalize) and a single GGUF (written whole by
// one partition).
func partitionPipeline(t *testing.T) string {
	return writePipeline(t, fmt.Sprintf(`
variable "out_dir" { type = string }
variable "key" {
  type      = string
  sensitive = true
}
source "safetensors" "hf" { path = %q }
transform "shard" "st" {
  input    = source.hf
  max_size = "48KB"
}
transform "sign" "release" {
  input = transform.st
  key   = var.key
}
sink "safetensors" "st" {
  input = transform.release
  path  = "${var.out_dir}/st/model.safetensors"
}
transform "shard" "gguf" {
  input       = source.hf
  max_tensors = 6
}
sink "gguf" "split" {
  input        = transform.gguf
  path         = "${var.out_dir}/gguf/model.gguf"
  architecture = "auto"
}
sink "apsim" "set" {
  input = transform.release
  path  = "${var.out_dir}/apsim/model.apsim"
}
sink "gguf" "whole" {
  input        = source.hf
  path         = "${var.out_dir}/model-q8_0.gguf"
  architecture = "auto"
  dtype        = "q8_0"
}
`, sampleDir(t)))
}

// runPartitions runs every partition of a run as its own process, all at
// once, as a batch system would.
func runPartitions(t *testing.T, bin, pipe, out string, n int, env ...string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "run", pipe, "--partition", fmt.Sprintf("%d/%d", i, n), "-var", "out_dir="+out, "--quiet")
			cmd.Env = append(os.Environ(), env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Sprintf("partition %d/%d: %v\n%s", i, n, err, b)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
}

// runBin runs a built sluice binary and returns its output and exit code.
func runBin(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(b), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), 0
}

func mustRunBin(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	out, code := runBin(t, bin, env, args...)
	if code != 0 {
		t.Fatalf("sluice %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// TestPartitionedRuns runs partitions as separate processes of a built
// sluice binary, as a batch system would on several machines.
func TestPartitionedRuns(t *testing.T) {
	bin := goBuild(t, "", ".", "sluice")
	t.Run("match-one-machine", func(t *testing.T) { partitionsMatchOneMachine(t, bin) })
	t.Run("finalize-checks", func(t *testing.T) { finalizeChecksThePartitions(t, bin) })
}

func partitionsMatchOneMachine(t *testing.T, bin string) {
	pipe := partitionPipeline(t)
	t.Setenv("SLUICE_VAR_key", "partition-key")
	single := t.TempDir()
	mustRun(t, "run", pipe, "-var", "out_dir="+single, "--quiet")
	want := withoutManifests(listFiles(t, single))
	if len(want) < 20 {
		t.Fatalf("the single run wrote only %d files", len(want))
	}
	for _, n := range []int{1, 3, 7} {
		t.Run(fmt.Sprintf("%d-partitions", n), func(t *testing.T) {
			out := t.TempDir()
			runPartitions(t, bin, pipe, out, n)
			parts, _ := filepath.Glob(filepath.Join(out, "st", "*.partition-*"+run.ManifestSuffix))
			if len(parts) != n {
				t.Fatalf("%d partition manifests beside the safetensors set, want %d", len(parts), n)
			}
			// The binary that ran the partitions finalizes: a run manifest
			// records the sluice binary, and finalize refuses partitions
			// that another one ran.
			mustRunBin(t, bin, nil, "finalize", pipe, "-var", "out_dir="+out, "--quiet")
			got := listFiles(t, out)
			for name := range got {
				if strings.Contains(name, ".partition-") {
					t.Errorf("partition manifest %s left after finalize", name)
				}
			}
			// Every output is listed, with its digest, in a run manifest.
			listed := map[string]string{}
			for name := range got {
				if !strings.HasSuffix(name, run.ManifestSuffix) {
					continue
				}
				m := readRunManifest(t, filepath.Join(out, name))
				if m.Partitions != n || m.Partition != nil {
					t.Errorf("%s: partitions %d, partition %v", name, m.Partitions, m.Partition)
				}
				for _, o := range m.Outputs {
					rel, _ := filepath.Rel(out, filepath.Join(out, filepath.Dir(name), filepath.FromSlash(o.Path)))
					listed[rel] = o.SHA256
				}
			}
			got = withoutManifests(got)
			for name, b := range want {
				switch {
				case got[name] == nil:
					t.Errorf("%s: written by the single run, not by the partitions", name)
				case !bytes.Equal(got[name], b):
					t.Errorf("%s: the partitions wrote other bytes than the single run", name)
				}
				if listed[name] != fileSHA256(t, filepath.Join(out, name)) {
					t.Errorf("%s: the run manifests record sha256 %q", name, listed[name])
				}
			}
			if len(got) != len(want) {
				t.Errorf("the partitions wrote %d files, the single run %d", len(got), len(want))
			}
			// A scheduled partition finds the finalized run unchanged.
			cmd := exec.Command(bin, "run", pipe, "--partition", fmt.Sprintf("0/%d", n), "-var", "out_dir="+out, "--skip-unchanged")
			if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "Nothing to do") {
				t.Errorf("partition 0 after finalize: %v\n%s", err, b)
			}
		})
	}
}

func finalizeChecksThePartitions(t *testing.T, bin string) {
	pipe := partitionPipeline(t)
	out := t.TempDir()
	t.Setenv("SLUICE_VAR_key", "k1")
	finalize := func() (string, int) { return runBin(t, bin, nil, "finalize", pipe, "-var", "out_dir="+out) }
	partition := func(p string, env ...string) {
		mustRunBin(t, bin, env, "run", pipe, "--partition", p, "-var", "out_dir="+out, "--quiet")
	}
	if stderr, code := finalize(); code == 0 || !strings.Contains(stderr, "--partition") {
		t.Errorf("finalize before any partition: exit %d\n%s", code, stderr)
	}
	partition("0/3")
	partition("1/3")
	if stderr, code := finalize(); code == 0 || !strings.Contains(stderr, "partition 2/3") {
		t.Errorf("finalize with a partition missing: exit %d\n%s", code, stderr)
	}
	// The last partition runs with another key.
	partition("2/3", "SLUICE_VAR_key=k2")
	if stderr, code := finalize(); code == 0 || !strings.Contains(stderr, "another value of a sensitive variable") {
		t.Errorf("finalize over partitions with different keys: exit %d\n%s", code, stderr)
	}
	// Another sluice binary ran a partition.
	mustRun(t, "run", pipe, "--partition", "2/3", "-var", "out_dir="+out, "--quiet")
	if stderr, code := finalize(); code == 0 || !strings.Contains(stderr, "another sluice binary") {
		t.Errorf("finalize over partitions of different binaries: exit %d\n%s", code, stderr)
	}
	partition("2/3")
	if stdout, code := finalize(); code != 0 || !strings.Contains(stdout, "Finalized a run of 3 partitions") {
		t.Fatalf("finalize: exit %d\n%s", code, stdout)
	}
	if stdout, _ := finalize(); !strings.Contains(stdout, "already finalized") {
		t.Errorf("a second finalize: %s", stdout)
	}
	// A stale partition manifest of another partition count is refused.
	partition("0/2")
	partition("1/3")
	if stderr, code := finalize(); code == 0 || !strings.Contains(stderr, "different partition counts") {
		t.Errorf("finalize over mixed partition counts: exit %d\n%s", code, stderr)
	}
}

func TestPartitionFlag(t *testing.T) {
	p := writePipeline(t, "source \"safetensors\" \"hf\" { path = \"x\" }\n")
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		_, stderr, code := sluice(t, "run", p, "--partition", bad)
		if code != exitBadConfig || !strings.Contains(stderr, "INDEX/COUNT") {
			t.Errorf("--partition %s: exit %d\n%s", bad, code, stderr)
		}
	}
}
