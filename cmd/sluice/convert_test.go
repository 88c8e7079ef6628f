package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// infoOf runs info --json on a path.
func infoOf(t *testing.T, path string) infoReport {
	t.Helper()
	var r infoReport
	decodeJSON(t, sluiceOK(t, "info", path, "--json"), &r)
	return r
}

func dtypeSet(r infoReport) map[string]int {
	m := map[string]int{}
	for _, d := range r.DTypes {
		m[d.DType] = d.Tensors
	}
	return m
}

func metaValue(r infoReport, key string) any {
	for _, m := range r.Metadata {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

func TestConvertFlagsOnEveryFormat(t *testing.T) {
	f := fixtures(t)
	for _, tc := range []struct {
		name  string
		in    string
		out   string
		flags []string
		check func(t *testing.T, out string)
	}{
		{"--dtype to gguf is the sink's dtype", f.ST, "m.gguf", []string{"--dtype", "q8_0"}, func(t *testing.T, out string) {
			d := dtypeSet(infoOf(t, out))
			if d["q8_0"] != 16 || d["f32"] != 5 {
				t.Errorf("dtypes %v: want 16 q8_0 matrices and 5 f32 norms", d)
			}
		}},
		{"--dtype to safetensors", f.HF, "m.safetensors", []string{"--dtype", "f16"}, func(t *testing.T, out string) {
			if d := dtypeSet(infoOf(t, out)); d["f16"] != 21 {
				t.Errorf("dtypes %v: want 21 f16", d)
			}
		}},
		{"--dtype to apsim is a quantize stage", f.HF, "m.apsim", []string{"--dtype", "int8"}, func(t *testing.T, out string) {
			if d := dtypeSet(infoOf(t, out)); d["qt_int8"] != 16 {
				t.Errorf("dtypes %v: want 16 int8 QTensors", d)
			}
		}},
		{"--dtype to apr is a quantize stage", f.HF, "m.apr", []string{"--dtype", "f16"}, func(t *testing.T, out string) {
			if d := dtypeSet(infoOf(t, out)); d["f16"] != 16 {
				t.Errorf("dtypes %v: want 16 f16 matrices", d)
			}
		}},
		{"--shard to gguf splits the file", f.HF, "m.gguf", []string{"--shard", "100KB"}, func(t *testing.T, out string) {
			if n := len(glob(t, strings.TrimSuffix(out, ".gguf")+"-*-of-*.gguf")); n < 2 {
				t.Errorf("%d shards", n)
			}
			if r := infoOf(t, out); r.TensorCount != f.Tensors {
				t.Errorf("the set holds %d tensors", r.TensorCount)
			}
		}},
		{"--shard measures shards in the --dtype written", f.HF, "m.gguf", []string{"--shard", "30KB", "--dtype", "q4_0", "--arch", "auto"}, func(t *testing.T, out string) {
			shards := glob(t, strings.TrimSuffix(out, ".gguf")+"-*-of-*.gguf")
			if len(shards) != 3 {
				t.Errorf("%d shards of 66 kB of q4_0 at 30KB each, want 3", len(shards))
			}
			for _, s := range shards {
				if fi, _ := os.Stat(s); fi.Size() > 40_000 {
					t.Errorf("%s has %d bytes", s, fi.Size())
				}
			}
			// The same bytes as the unsharded conversion.
			whole := filepath.Join(t.TempDir(), "whole.gguf")
			sluiceCode(t, exitOK, "convert", f.HF, whole, "--dtype", "q4_0", "--arch", "auto", "--in-process", "-q")
			sluiceCode(t, exitOK, "diff", whole, out, "--strict", "-q")
		}},
		{"--shard to safetensors", f.HF, "m.safetensors", []string{"--shard", "100KB"}, func(t *testing.T, out string) {
			if n := len(glob(t, filepath.Join(filepath.Dir(out), "m-*-of-*.safetensors"))); n < 2 {
				t.Errorf("%d shards", n)
			}
			if r := infoOf(t, out); r.TensorCount != f.Tensors {
				t.Errorf("the set holds %d tensors", r.TensorCount)
			}
		}},
		{"--shard to apsim is the sink's shard size", f.GGUFQ4, "m.apsim", []string{"--shard", "100KB"}, func(t *testing.T, out string) {
			// q4_0 expands to f32 in apsim (460 kB): the sink measures the shards after that.
			shards := glob(t, filepath.Join(filepath.Dir(out), "m-*-of-*.apsim"))
			if len(shards) < 4 {
				t.Errorf("%d shards for 460 kB at 100KB each", len(shards))
			}
			for _, s := range shards {
				if fi, _ := os.Stat(s); fi.Size() > 120_000 {
					t.Errorf("%s has %d bytes", s, fi.Size())
				}
			}
		}},
		{"--shard to apr", f.HF, "m.apr", []string{"--shard", "100KB"}, func(t *testing.T, out string) {
			if n := len(glob(t, filepath.Join(filepath.Dir(out), "m-*-of-*.apr"))); n < 2 {
				t.Errorf("%d shards", n)
			}
		}},
		{"--key to apsim embeds the signature", f.HF, "m.apsim", []string{"--key", testSecret}, func(t *testing.T, out string) {
			sluiceCode(t, exitOK, "verify", out, "--key", testSecret)
			if _, err := os.Stat(out + ".sig"); err == nil {
				t.Error("apsim embeds its signature; a detached one was written too")
			}
		}},
		{"--key to gguf writes a detached signature", f.HF, "m.gguf", []string{"--key", testSecret}, func(t *testing.T, out string) {
			sluiceCode(t, exitOK, "verify", out, "--key", testSecret)
			sluiceCode(t, exitBadInput, "verify", out, "--key", "wrong")
		}},
		{"--key to apr", f.HF, "m.apr", []string{"--key", testSecret}, func(t *testing.T, out string) {
			sluiceCode(t, exitOK, "verify", out, "--key", testSecret)
		}},
		{"--key-file", f.HF, "m.safetensors", []string{"--key-file", "KEYFILE"}, func(t *testing.T, out string) {
			sluiceCode(t, exitOK, "verify", out, "--key", testSecret)
		}},
		{"--arch auto", f.HF, "m.gguf", []string{"--arch", "auto", "--dtype", "q8_0"}, func(t *testing.T, out string) {
			r := infoOf(t, out)
			if metaValue(r, "general.architecture") != "llama" || metaValue(r, "tokenizer.ggml.model") != "gpt2" {
				t.Errorf("general.architecture %v, tokenizer.ggml.model %v", metaValue(r, "general.architecture"), metaValue(r, "tokenizer.ggml.model"))
			}
			found := false
			for _, e := range r.Tensors {
				found = found || e.Name == "blk.0.attn_q.weight"
			}
			if !found {
				t.Error("tensors were not renamed as llama.cpp names them")
			}
		}},
		{"--layout spec", f.HF, "m.apr", []string{"--layout", "spec"}, func(t *testing.T, out string) {
			text, _ := sluiceCode(t, exitOK, "verify", out)
			if !strings.Contains(text, "spec layout") {
				t.Errorf("not the spec layout:\n%s", text)
			}
		}},
		{"--format", f.HF, "weights.bin", []string{"--format", "safetensors"}, func(t *testing.T, out string) {
			if r := infoOf(t, out); r.Format != "safetensors" {
				t.Errorf("format %s", r.Format)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, tc.out)
			flags := append([]string(nil), tc.flags...)
			for i, fl := range flags {
				if fl == "KEYFILE" {
					flags[i] = filepath.Join(dir, "key")
					os.WriteFile(flags[i], []byte(testSecret+"\n"), 0o600)
				}
			}
			args := append([]string{"convert", tc.in, out, "--in-process", "-q"}, flags...)
			sluiceCode(t, exitOK, args...)
			tc.check(t, out)
		})
	}
}

func TestConvertUserKey(t *testing.T) {
	f := fixtures(t)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg)
	out := filepath.Join(t.TempDir(), "m.apsim")
	sluiceCode(t, exitOK, "convert", f.ST, out, "--user-key", "--in-process", "-q")
	sluiceCode(t, exitOK, "verify", out, "--user-key")
	sluiceCode(t, exitBadInput, "verify", out, "--key", "a shared secret")
}

func TestConvertRefusalsNameTheFlag(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{f.HF, filepath.Join(dir, "a.safetensors"), "--arch", "auto"}, "--arch: the safetensors format has no architecture option (it applies to gguf)"},
		{[]string{f.HF, filepath.Join(dir, "a.gguf"), "--layout", "spec"}, "--layout: the gguf format has no layout option (it applies to apr)"},
		{[]string{f.HF, filepath.Join(dir, "a.safetensors"), "--dtype", "q4_0"}, "--dtype"},
		{[]string{f.HF, filepath.Join(dir, "a.gguf"), "--dtype", "nonsense"}, "--dtype"},
		{[]string{f.HF, filepath.Join(dir, "a.apsim"), "--dtype", "nonsense"}, "--dtype"},
		{[]string{f.HF, filepath.Join(dir, "a.gguf"), "--shard", "lots"}, "--shard"},
		{[]string{f.HF, filepath.Join(dir, "a.unknown")}, "cannot tell the output format"},
		{[]string{f.HF, filepath.Join(dir, "a.gguf"), "--key", "k", "--user-key"}, "give one of --key, --key-file and --user-key"},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			_, stderr := sluiceCode(t, exitBadConfig, append([]string{"convert", "--in-process", "-q"}, tc.args...)...)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("the error does not say %q:\n%s", tc.want, stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused conversion wrote %v", entries)
			}
		})
	}
}

// TestPrintedPipelineRunsTheSame checks that --print-pipeline prints the
// pipeline convert runs: running the printed file writes the same bytes.
func TestPrintedPipelineRunsTheSame(t *testing.T) {
	f := fixtures(t)
	for _, tc := range []struct {
		name, in, out string
		flags         []string
	}{
		{"gguf-q4_0", f.ST, "model.gguf", []string{"--dtype", "q4_0"}},
		{"apsim-signed-sharded", f.GGUF, "model.apsim", []string{"--shard", "100KB", "--key", testSecret}},
		{"safetensors", f.Apsim, "model.safetensors", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			direct := filepath.Join(dir, "direct", tc.out)
			viaRun := filepath.Join(dir, "run", tc.out)
			sluiceCode(t, exitOK, append([]string{"convert", tc.in, direct, "--in-process", "-q"}, tc.flags...)...)
			hcl, _ := sluiceCode(t, exitOK, append([]string{"convert", tc.in, direct, "--print-pipeline"}, tc.flags...)...)
			if strings.Contains(hcl, testSecret) {
				t.Fatal("the printed pipeline holds the key")
			}
			golden(t, "convert-"+tc.name+".hcl", hcl, f.dir, "$FIXTURES", dir, "$OUT")
			p := filepath.Join(dir, "convert.hcl")
			os.WriteFile(p, []byte(hcl), 0o644)
			t.Setenv("SLUICE_VAR_signing_key", testSecret)
			sluiceCode(t, exitOK, "run", p, "-var", "output="+viaRun, "--in-process", "-q", "--run-manifest=false")
			a, b := listFiles(t, filepath.Dir(direct)), listFiles(t, filepath.Dir(viaRun))
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("convert wrote %d files, run %d", len(a), len(b))
			}
			for name, data := range a {
				if !bytes.Equal(b[name], data) {
					t.Errorf("%s differs between convert and the printed pipeline", name)
				}
			}
			sluiceCode(t, exitOK, "fmt", "-check", p)
		})
	}
}

func TestConvertPlanWritesNothing(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	out, _ := sluiceCode(t, exitOK, "convert", f.HF, filepath.Join(dir, "m.gguf"), "--dtype", "q4_0", "--plan", "--in-process")
	for _, want := range []string{"bf16 → q4_0", "writes " + filepath.Join(dir, "m.gguf")} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--plan wrote %v", entries)
	}
}

// TestConvertProgress checks the plain progress lines of a run outside a
// terminal, and that --quiet silences them.
func TestConvertProgress(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	out, stderr := sluiceCode(t, exitOK, "convert", f.HF, filepath.Join(dir, "a.gguf"), "--in-process")
	for _, want := range []string{"processing 21 tensors", "progress: 100%", "/s", "done: 21 tensors"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "wrote ") {
		t.Errorf("no list of written files:\n%s", out)
	}
	out, stderr = sluiceCode(t, exitOK, "convert", f.HF, filepath.Join(dir, "b.gguf"), "--in-process", "--quiet")
	if out != "" || stderr != "" {
		t.Errorf("--quiet printed:\n%s%s", out, stderr)
	}
}

// TestConvertFromEveryFormat converts every readable format to safetensors
// and checks, with diff, that the values came through: exactly, or as
// their exact f32 expansion for dtypes safetensors cannot hold.
func TestConvertFromEveryFormat(t *testing.T) {
	f := fixtures(t)
	root := repoRoot(t)
	for _, tc := range []struct{ name, in string }{
		{"hugging face directory", f.HF},
		{"safetensors", f.ST},
		{"gguf q8_0", f.GGUF},
		{"gguf split set", f.GGUFSplit},
		{"apsim", f.Apsim},
		{"apsim set", f.ApsimSet},
		{"apsim QTensors", f.ApsimQ},
		{"apr", f.APR},
		{"pytorch", filepath.Join(root, "plugins", "pytorch", "testdata", "params.pth")},
		{"onnx", filepath.Join(root, "plugins", "onnx", "testdata", "model.onnx")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.safetensors")
			sluiceCode(t, exitOK, "convert", tc.in, out, "--in-process", "-q")
			r := diffOf(t, exitOK, tc.in, out, "--max-abs", "0", "--ignore-metadata")
			if r.Summary.Compared == 0 || len(r.Tensors.OnlyInA)+len(r.Tensors.OnlyInB) != 0 {
				t.Errorf("%d compared, only in A %v, only in B %v", r.Summary.Compared, r.Tensors.OnlyInA, r.Tensors.OnlyInB)
			}
		})
	}
}

// TestConvertWithoutFsync checks that convert --fsync=false writes the same
// bytes as a default convert, out of process.
func TestConvertWithoutFsync(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	synced, unsynced := filepath.Join(dir, "synced.gguf"), filepath.Join(dir, "unsynced.gguf")
	sluiceCode(t, exitOK, "convert", f.HF, synced, "--dtype", "q8_0", "--quiet")
	sluiceCode(t, exitOK, "convert", f.HF, unsynced, "--dtype", "q8_0", "--quiet", "--fsync=false")
	a, errA := os.ReadFile(synced)
	b, errB := os.ReadFile(unsynced)
	if errA != nil || errB != nil || len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("--fsync=false wrote other bytes (%d against %d; %v, %v)", len(b), len(a), errB, errA)
	}
}
