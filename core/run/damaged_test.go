package run

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestDamagedBlocksNameTheFile is a regression test: dequantizing a q8_0
// tensor read from a file whose block has a NaN scale fails as bad input, and
// the error names the file, the tensor and the block (it named the stage and
// the tensor only).
func TestDamagedBlocksNameTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.bin")
	block := make([]byte, 34)
	block[0], block[1] = 0x00, 0x7e // f16 NaN
	os.WriteFile(p, append([]byte("head"), block...), 0o644)
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34, Location: &tensor.FileRef{Path: p, Offset: 4, Length: 34}},
	}}}
	sink := &memSink{convert: map[string]tensor.DType{"q": tensor.F32}}
	pl := build(t, src, map[string]*memSink{"out": sink}, nil)
	err := execute(t, pl, src, 8, 1<<10, 1)
	if err == nil || !plugin.IsBadInput(err) {
		t.Fatalf("got %v, want a bad-input error", err)
	}
	for _, want := range []string{p, `tensor "q"`, "block 0", "NaN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if !sink.aborted || sink.commit {
		t.Errorf("the sink was not aborted")
	}
}

// TestDamagedDataNamesTheSourceFile: a tensor a source hands over without a
// file reference (an apsim QTensor) whose data is damaged gives an error that
// names the source's file.
func TestDamagedDataNamesTheSourceFile(t *testing.T) {
	block := make([]byte, 34)
	block[0], block[1] = 0x00, 0x7c // f16 +Inf
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34},
	}}, data: map[string][]byte{"q": block}}
	sink := &memSink{convert: map[string]tensor.DType{"q": tensor.F32}}
	pl := build(t, src, map[string]*memSink{"out": sink}, nil)
	pl.Trees[0].Source.Config = cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("ckpt/model.apsim")})
	err := execute(t, pl, src, 8, 1<<10, 1)
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "ckpt/model.apsim") {
		t.Fatalf("got %v, want a bad-input error naming ckpt/model.apsim", err)
	}
}

// TestTensorsOutsideTheirFileNameIt: a file reference to bytes past the end
// of its file fails as bad input naming the file, the tensor and the file's
// size, whether the file was that short when the run first looked at it or
// was cut short after (the run keeps the size it saw, and finds the cut when
// a read comes short).
func TestTensorsOutsideTheirFileNameIt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.bin")
	os.WriteFile(p, make([]byte, 4+34+10), 0o644)
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "a", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34, Location: &tensor.FileRef{Path: p, Offset: 4, Length: 34}},
		{Name: "b", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34, Location: &tensor.FileRef{Path: p, Offset: 38, Length: 34}},
	}}}
	sink := &memSink{convert: map[string]tensor.DType{"a": tensor.F32, "b": tensor.F32}}
	pl := build(t, src, map[string]*memSink{"out": sink}, nil)
	err := execute(t, pl, src, 8, 1<<10, 1)
	if err == nil || !plugin.IsBadInput(err) {
		t.Fatalf("got %v, want a bad-input error", err)
	}
	for _, want := range []string{p, `tensor "b"`, "[38, 72)", "file of 48 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}

	// Cut short after the run looked.
	os.WriteFile(p, make([]byte, 4+34+34), 0o644)
	r := &runner{files: map[string]*sourceFile{}}
	defer r.closeFiles()
	f, err := r.file(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 50); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.holds(4, 38); !ok {
		t.Error("a range inside the size the run saw was looked at again")
	}
	b := src.m.Tensors[1]
	sr := &sectionReader{SectionReader: io.NewSectionReader(f, 38, 34), file: f, loc: b.Location, tensor: &b}
	_, err = io.ReadAll(sr)
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "file of 50 bytes") || !strings.Contains(err.Error(), `tensor "b"`) {
		t.Errorf("reading a tensor of a file cut short: %v", err)
	}
	if size, ok := f.holds(38, 72); ok || size != 50 {
		t.Errorf("holds after the cut = %d, %v; want 50, false", size, ok)
	}
}
