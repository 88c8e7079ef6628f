package run

import (
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
