package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/sample"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func sampleNames() []string {
	var names []string
	for _, t := range sample.Default.Tensors() {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

func TestInfoOnEveryFormat(t *testing.T) {
	f := fixtures(t)
	shard2 := filepath.Join(f.HF, "model-00002-of-00002.safetensors")
	for _, tc := range []struct {
		name, path, format, note string
	}{
		{"hugging face directory", f.HF, "safetensors", ""},
		{"hugging face index", filepath.Join(f.HF, "model.safetensors.index.json"), "safetensors", ""},
		{"any safetensors shard", shard2, "safetensors", "reading the whole set through model.safetensors.index.json"},
		{"safetensors file", f.ST, "safetensors", ""},
		{"gguf q8_0", f.GGUF, "gguf", ""},
		{"gguf q4_0", f.GGUFQ4, "gguf", ""},
		{"any gguf shard", filepath.Join(filepath.Dir(f.GGUFSplit), "model-00002-of-00003.gguf"), "gguf", ""},
		{"gguf set by its output name", f.GGUFSplitName, "gguf", "reading it from model-00001-of-00003.gguf"},
		{"apsim file", f.Apsim, "apsim", ""},
		{"apsim index", f.ApsimSet, "apsim", ""},
		{"any apsim shard", filepath.Join(filepath.Dir(f.ApsimSet), "model-00002-of-00003.apsim"), "apsim", ""},
		{"apsim set by its output name", f.ApsimSetName, "apsim", "reading it through model.apsim.index.json"},
		{"apsim QTensors", f.ApsimQ, "apsim", ""},
		{"apr", f.APR, "apr", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil && tc.note == "" {
				entries, _ := os.ReadDir(filepath.Dir(tc.path))
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Fatalf("fixture missing: %v (the directory holds %v)", err, names)
			}
			var r infoReport
			decodeJSON(t, sluiceOK(t, "info", tc.path, "--json"), &r)
			if r.Schema != infoSchema || r.Format != tc.format || r.Path != tc.path {
				t.Errorf("schema %q format %q path %q, want %q %q %q", r.Schema, r.Format, r.Path, infoSchema, tc.format, tc.path)
			}
			if r.TensorCount != f.Tensors || len(r.Tensors) != f.Tensors || r.Parameters != f.Params {
				t.Errorf("%d tensors (%d listed), %d parameters; want %d and %d", r.TensorCount, len(r.Tensors), r.Parameters, f.Tensors, f.Params)
			}
			var names []string
			var bytes uint64
			for _, e := range r.Tensors {
				names = append(names, e.Name)
				bytes += e.Bytes
				n := uint64(1)
				for _, d := range e.Shape {
					n *= d
				}
				if n != e.Parameters {
					t.Errorf("%s: %d parameters for shape %v", e.Name, e.Parameters, e.Shape)
				}
			}
			sort.Strings(names)
			if strings.Join(names, ",") != strings.Join(sampleNames(), ",") {
				t.Errorf("tensor names %v, want the sample's %v", names, sampleNames())
			}
			if bytes != r.Bytes {
				t.Errorf("bytes %d, the tensors sum to %d", r.Bytes, bytes)
			}
			var dtypeTensors int
			for _, d := range r.DTypes {
				dtypeTensors += d.Tensors
			}
			if dtypeTensors != r.TensorCount {
				t.Errorf("the dtype summary counts %d tensors, not %d", dtypeTensors, r.TensorCount)
			}
			text := sluiceOK(t, "info", tc.path)
			for _, want := range []string{tc.format + ", 21 tensors", "parameters", "model.layers.1.mlp.up_proj.weight", tc.note} {
				if !strings.Contains(text, want) {
					t.Errorf("text output lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

func TestInfoOnPyTorchAndONNX(t *testing.T) {
	root := repoRoot(t)
	for _, tc := range []struct{ path, format string }{
		{filepath.Join(root, "plugins", "pytorch", "testdata", "params.pth"), "pytorch"},
		{filepath.Join(root, "plugins", "onnx", "testdata", "model.onnx"), "onnx"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var r infoReport
			decodeJSON(t, sluiceOK(t, "info", tc.path, "--json"), &r)
			if r.Format != tc.format || r.TensorCount == 0 || r.TensorCount != len(r.Tensors) {
				t.Errorf("format %q with %d tensors (%d listed)", r.Format, r.TensorCount, len(r.Tensors))
			}
		})
	}
}

// TestInfoJSONGolden pins the sluice.info/v1 schema on one checkpoint of
// each format the CLI writes.
func TestInfoJSONGolden(t *testing.T) {
	f := fixtures(t)
	for name, path := range map[string]string{
		"info-gguf.json":           f.GGUF,
		"info-apsim-index.json":    f.ApsimSet,
		"info-hf-dir.json":         f.HF,
		"info-apr.json":            f.APR,
		"info-apsim-qtensors.json": f.ApsimQ,
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, name, sluiceOK(t, "info", path, "--json"), f.dir, "$FIXTURES")
		})
	}
	t.Run("info-gguf-tree.json", func(t *testing.T) {
		golden(t, "info-gguf-tree.json", sluiceOK(t, "info", f.GGUF, "--json", "--tree", "--all"), f.dir, "$FIXTURES")
	})
}

func TestInfoTree(t *testing.T) {
	f := fixtures(t)
	text := sluiceOK(t, "info", f.HF, "--tree")
	golden(t, "info-hf-tree.txt", text, f.dir, "$FIXTURES")
	for _, want := range []string{"parameter tree:", "  model ", "    layers ", "      0..1 ", "× 2 (each)", "embed_tokens.weight", "bf16 [320, 64]"} {
		if !strings.Contains(text, want) {
			t.Errorf("tree lacks %q:\n%s", want, text)
		}
	}
	var r infoReport
	decodeJSON(t, sluiceOK(t, "info", f.GGUF, "--json", "--tree"), &r)
	if r.Tree == nil || r.Tree.Parameters != r.Parameters || r.Tree.Bytes != r.Bytes {
		t.Fatalf("tree root %+v does not sum to the checkpoint's %d parameters, %d bytes", r.Tree, r.Parameters, r.Bytes)
	}
	leaves := map[string]int{}
	var walk func(n *infoNode) uint64
	walk = func(n *infoNode) uint64 {
		var sum uint64
		if n.Tensor != "" {
			leaves[n.Tensor]++
			for _, e := range r.Tensors {
				if e.Name == n.Tensor {
					sum += e.Parameters
				}
			}
		}
		for _, c := range n.Children {
			sum += walk(c)
		}
		if sum != n.Parameters {
			t.Errorf("node %q: %d parameters, its tensors sum to %d", n.Key, n.Parameters, sum)
		}
		return sum
	}
	walk(r.Tree)
	if len(leaves) != r.TensorCount {
		t.Errorf("the tree holds %d tensors, the checkpoint %d", len(leaves), r.TensorCount)
	}
	for name, n := range leaves {
		if n != 1 {
			t.Errorf("%s appears %d times in the tree", name, n)
		}
	}
}

func TestInfoErrors(t *testing.T) {
	dir := t.TempDir()
	_, stderr := sluiceCode(t, exitBadInput, "info", filepath.Join(dir, "missing.gguf"))
	if !strings.Contains(stderr, "missing.gguf") || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
		t.Errorf("a missing file should be one line naming it (plus a hint):\n%s", stderr)
	}
	text := filepath.Join(dir, "notes.gguf")
	os.WriteFile(text, []byte("these are notes, not a model\n"), 0o644)
	_, stderr = sluiceCode(t, exitBadInput, "info", text)
	if !strings.Contains(stderr, "no plugin recognises this file") || !strings.Contains(stderr, "Hint:") {
		t.Errorf("an unknown file should say no plugin reads it, with a hint:\n%s", stderr)
	}
	bad := filepath.Join(dir, "bad.gguf")
	b, _ := os.ReadFile(fixtures(t).GGUF)
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	_, stderr = sluiceCode(t, exitBadInput, "info", bad)
	if !strings.Contains(stderr, "bad.gguf") || !strings.Contains(stderr, "offset") && !strings.Contains(stderr, "[") {
		t.Errorf("a truncated file should be named with the offset at fault:\n%s", stderr)
	}
}

// hugeTensorBytes is the size of the sparse tensor the header-only tests
// declare: 100 GiB that take no disk.
const hugeTensorBytes = 100 << 30

// sparseSafetensors writes a safetensors file (with the given string
// metadata) declaring one f32 tensor of hugeTensorBytes, as a sparse file.
func sparseSafetensors(t *testing.T, path string, md map[string]string) {
	t.Helper()
	n := uint64(hugeTensorBytes / 4)
	l, err := st.PlanLayout([]st.Tensor{{Name: "huge.weight", DType: tensor.F32, Shape: []uint64{n / 4096, 4096}, Size: n * 4}}, md)
	if err != nil {
		t.Fatal(err)
	}
	writeSparse(t, path, l.Prefix, int64(l.FileSize()))
}

// sparseGGUF writes a GGUF v3 file declaring one f32 tensor of
// hugeTensorBytes, as a sparse file.
func sparseGGUF(t *testing.T, path string) {
	t.Helper()
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("GGUF")
	w(uint32(3))
	w(uint64(1)) // tensors
	w(uint64(1)) // key/values
	key := "general.architecture"
	w(uint64(len(key)))
	b.WriteString(key)
	w(uint32(8)) // string
	w(uint64(5))
	b.WriteString("llama")
	name := "huge.weight"
	w(uint64(len(name)))
	b.WriteString(name)
	w(uint32(2))
	w(uint64(4096))
	w(uint64(hugeTensorBytes / 4 / 4096))
	w(uint32(0)) // f32
	w(uint64(0)) // offset
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	writeSparse(t, path, b.Bytes(), int64(b.Len())+hugeTensorBytes)
}

func writeSparse(t *testing.T, path string, head []byte, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(head); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("this file system cannot hold a sparse %d-byte file: %v", size, err)
	}
}

// bytesRead returns how many bytes this process has read through system
// calls so far (Linux /proc/self/io rchar), or -1.
func bytesRead() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// TestInfoReadsHeadersOnly declares a 100 GiB tensor in a sparse file of
// each format: info must answer from the header, reading a few kilobytes,
// in milliseconds.
func TestInfoReadsHeadersOnly(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"safetensors": filepath.Join(dir, "huge.safetensors"),
		"gguf":        filepath.Join(dir, "huge.gguf"),
		"apsim":       filepath.Join(dir, "huge.apsim"),
	}
	sparseSafetensors(t, files["safetensors"], map[string]string{"format": "pt"})
	sparseGGUF(t, files["gguf"])
	sparseApsim(t, files["apsim"])
	for format, path := range files {
		t.Run(format, func(t *testing.T) {
			sluiceOK(t, "info", path) // warm the page cache and the code paths
			before := bytesRead()
			start := time.Now()
			var r infoReport
			decodeJSON(t, sluiceOK(t, "info", path, "--json"), &r)
			elapsed := time.Since(start)
			read := bytesRead() - before
			if r.Format != format || r.Bytes != hugeTensorBytes || r.Parameters != hugeTensorBytes/4 {
				t.Fatalf("format %s, %d bytes, %d parameters; want %s, %d, %d", r.Format, r.Bytes, r.Parameters, format, uint64(hugeTensorBytes), hugeTensorBytes/4)
			}
			t.Logf("info on a %d GiB %s file: %v, %d bytes read", hugeTensorBytes>>30, format, elapsed, read)
			if before >= 0 && read > 1<<20 {
				t.Errorf("info read %d bytes of a file whose header is a few hundred", read)
			}
			if limit := 500 * time.Millisecond; elapsed > limit && !raceEnabled {
				t.Errorf("info took %v on a header-only read (limit %v)", elapsed, limit)
			}
		})
	}
}

// sparseApsim writes an unsigned apsim file declaring a 100 GiB tensor. Its
// digest is not that of its (zero) data: info reads headers only and never
// checks it; verify would refuse the file.
func sparseApsim(t *testing.T, path string) {
	t.Helper()
	sparseSafetensors(t, path, map[string]string{
		"format": "apsi-model", "version": "1", "apsi": "sluice test", "units": "{}", "qtensors": "{}",
		"metadata": "{}", "sha256": strings.Repeat("0", 64),
	})
}

// TestInfoInProcessIsFast measures info on the GGUF fixture run the default
// way (the format plugin inside the sluice process) and with --isolate (a
// plugin process, as run starts them). The default must answer within 50 ms.
func TestInfoInProcessIsFast(t *testing.T) {
	f := fixtures(t)
	median := func(args ...string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 7; i++ {
			start := time.Now()
			sluiceOK(t, args...)
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	in := median("info", f.GGUF, "--json")
	out := median("info", f.GGUF, "--json", "--isolate")
	t.Logf("info on a GGUF file: in-process %v, as a plugin process %v (median of 7)", in, out)
	if !raceEnabled && in > 50*time.Millisecond {
		t.Errorf("info took %v in-process; it must stay under 50 ms", in)
	}
}

func TestResolveInput(t *testing.T) {
	f := fixtures(t)
	for _, tc := range []struct{ arg, want string }{
		{f.ApsimSetName, f.ApsimSet},
		{f.GGUFSplitName, f.GGUFSplit},
		{filepath.Join(f.HF, "model-00001-of-00002.safetensors"), filepath.Join(f.HF, "model.safetensors.index.json")},
		{f.Apsim + ".index.json", f.Apsim},
		{f.ST, f.ST},
		{f.HF, f.HF},
	} {
		if got, _ := resolveInput(tc.arg); got != tc.want {
			t.Errorf("resolveInput(%s) = %s, want %s", tc.arg, got, tc.want)
		}
	}
}

// TestInfoJSONArrayLength: a long array cut to maxJSONArray elements still
// reports its whole length (a regression: it reported the number shown).
func TestInfoJSONArrayLength(t *testing.T) {
	tokens := make([]string, maxJSONArray+10)
	for i := range tokens {
		tokens[i] = fmt.Sprint(i)
	}
	for _, v := range []tensor.Value{tensor.StringArray(tokens), tensor.Int32Array(make([]int32, maxJSONArray+10))} {
		e := metadataJSON("k", v, false)
		if e.Length == nil || *e.Length != maxJSONArray+10 || !e.Truncated {
			t.Errorf("%s: length %v, truncated %v; want %d, true", v.Elem(), e.Length, e.Truncated, maxJSONArray+10)
		}
		if got := reflect.ValueOf(e.Value).Len(); got != maxJSONArray {
			t.Errorf("%s: %d elements shown, want %d", v.Elem(), got, maxJSONArray)
		}
	}
}

// writeInfoJSON writes a report one tensor and one tree node at a time; its
// bytes must be those of the report encoded as one value (writeJSON), the
// documented schema's formatting included.
func TestInfoJSONWrittenInPiecesIsTheWholeValue(t *testing.T) {
	file, offset := 0, uint64(4096)
	tensors := []infoTensor{
		{Name: "model.embed_tokens.weight", DType: "bf16", Shape: []uint64{32, 8}, Parameters: 256, Bytes: 512, File: &file, Offset: &offset},
		{Name: `odd <name> & "quotes" é`, DType: "f32", Shape: []uint64{}, Parameters: 1, Bytes: 4, Attrs: map[string]string{"sluice.shard": "1/2", "b": "<&>"}},
	}
	leaf := &infoNode{Key: "weight", Tensor: "model.embed_tokens.weight", Parameters: 256, Bytes: 512}
	tree := &infoNode{Key: "", Parameters: 257, Bytes: 516, Children: []*infoNode{
		{Key: "model", Parameters: 256, Bytes: 512, Children: []*infoNode{{Key: "embed_tokens", Parameters: 256, Bytes: 512, Children: []*infoNode{leaf}}}},
		{Key: "odd", Tensor: `odd <name> & "quotes" é`, Parameters: 1, Bytes: 4},
	}}
	base := infoReport{
		Schema: infoSchema, Path: "m.safetensors", Read: "/x/m.safetensors", Format: "safetensors",
		Files: []infoFile{{Path: "/x/m.safetensors", Bytes: 5000}}, TensorCount: 2, Parameters: 257, Bytes: 516,
		DTypes:   []infoDType{{DType: "bf16", Tensors: 1, Parameters: 256, Bytes: 512}},
		Metadata: []infoMetadata{{Key: "format", Type: "string", Value: "pt <&>"}},
	}
	cases := map[string]func(r *infoReport){
		"no tensors":        func(r *infoReport) { r.Tensors = []infoTensor{} },
		"tensors":           func(r *infoReport) { r.Tensors = tensors },
		"tree":              func(r *infoReport) { r.Tensors, r.Tree = []infoTensor{}, tree },
		"tensors and tree":  func(r *infoReport) { r.Tensors, r.Tree = tensors, tree },
		"a tree of a leaf":  func(r *infoReport) { r.Tensors, r.Tree = []infoTensor{}, leaf },
		"one tensor, empty": func(r *infoReport) { r.Tensors = []infoTensor{{Name: "e", DType: "u8", Shape: []uint64{0}}} },
	}
	for name, set := range cases {
		r := base
		set(&r)
		var whole, pieces bytes.Buffer
		if err := writeJSON(&whole, &r); err != nil {
			t.Fatal(err)
		}
		if err := writeInfoJSON(&pieces, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(whole.Bytes(), pieces.Bytes()) {
			t.Errorf("%s: written in pieces:\n%s\nas one value:\n%s", name, pieces.Bytes(), whole.Bytes())
		}
	}
}
