package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func diffOf(t *testing.T, want int, args ...string) diffReport {
	t.Helper()
	out, _ := sluiceCode(t, want, append([]string{"diff", "--json", "-q"}, args...)...)
	var r diffReport
	decodeJSON(t, out, &r)
	return r
}

func TestDiffIdenticalTensors(t *testing.T) {
	f := fixtures(t)
	for _, b := range []string{f.ST, f.APR} {
		t.Run(filepath.Base(filepath.Dir(b)), func(t *testing.T) {
			r := diffOf(t, exitOK, f.HF, b)
			if !r.OK || r.Summary.Compared != f.Tensors || r.Summary.Identical != f.Tensors {
				t.Errorf("ok %v, %d compared, %d identical; want every tensor identical", r.OK, r.Summary.Compared, r.Summary.Identical)
			}
			for _, d := range r.Tensors.Compared {
				if d.MaxAbs != 0 || d.RMSE != 0 || d.Cosine != 1 {
					t.Errorf("%s: identical bytes but max abs %v, rmse %v, cosine %v", d.Name, d.MaxAbs, d.RMSE, d.Cosine)
				}
			}
			sluiceCode(t, exitOK, "diff", f.HF, b, "--strict", "--ignore-metadata", "-q")
		})
	}
	// The directory carries its config and tokenizer as metadata; the lone
	// file does not: --strict counts that.
	out, _ := sluiceCode(t, exitDiffers, "diff", f.HF, f.ST, "--strict")
	if !strings.Contains(out, "metadata hf.config.json: only in A") {
		t.Errorf("--strict should fail on metadata only in A:\n%s", out)
	}
}

func TestDiffDequantizesAndGates(t *testing.T) {
	f := fixtures(t)
	r := diffOf(t, exitOK, f.HF, f.GGUF)
	if r.Summary.Compared != f.Tensors || r.Summary.WorstCosine == nil || r.Summary.WorstCosine.Value < 0.9999 {
		t.Fatalf("bf16 → q8_0 should compare every tensor with cosine > 0.9999: %+v", r.Summary)
	}
	for _, d := range r.Tensors.Compared {
		if !d.Compared || d.DTypeA != "bf16" {
			t.Errorf("%s: compared %v (%s), dtype_a %s", d.Name, d.Compared, d.Reason, d.DTypeA)
		}
		if len(d.ShapeA) == 2 && (d.DTypeB != "q8_0" || d.RMSE <= 0 || d.MaxAbs <= 0 || d.RelRMSE <= 0 || d.RelRMSE > 0.01) {
			t.Errorf("%s: %s → %s, rmse %v, max abs %v, rel rmse %v", d.Name, d.DTypeA, d.DTypeB, d.RMSE, d.MaxAbs, d.RelRMSE)
		}
		if len(d.ShapeA) == 1 && d.MaxAbs != 0 {
			t.Errorf("%s: a norm kept as f32 differs by %v", d.Name, d.MaxAbs)
		}
	}
	q4 := diffOf(t, exitOK, f.HF, f.GGUFQ4)
	if q4.Summary.MaxRMSE.Value <= r.Summary.MaxRMSE.Value {
		t.Errorf("q4_0 (RMSE %v) should drift more than q8_0 (%v)", q4.Summary.MaxRMSE.Value, r.Summary.MaxRMSE.Value)
	}
	// The gates: a limit between q8_0's and q4_0's error passes one and fails the other.
	limit := fmt.Sprint((float64(q4.Summary.MaxRMSE.Value) + float64(r.Summary.MaxRMSE.Value)) / 2)
	sluiceCode(t, exitOK, "diff", f.HF, f.GGUF, "--max-rmse", limit, "-q")
	out, _ := sluiceCode(t, exitDiffers, "diff", f.HF, f.GGUFQ4, "--max-rmse", limit, "-q")
	if !strings.Contains(out, "FAIL model.") || !strings.Contains(out, "> --max-rmse") {
		t.Errorf("the failures should name the tensors and the limit:\n%s", out)
	}
	for _, gate := range [][]string{{"--min-cosine", "0.9999999"}, {"--max-abs", "1e-6"}, {"--max-rel-rmse", "1e-6"}} {
		g := diffOf(t, exitDiffers, append([]string{f.HF, f.GGUFQ4}, gate...)...)
		if g.OK || g.Summary.Failed != 16 || len(g.Failures) != 16 {
			t.Errorf("%v: %d tensors failed (%d failures), want the 16 quantized ones", gate, g.Summary.Failed, len(g.Failures))
		}
	}
	sluiceCode(t, exitBadConfig, "diff", f.HF, f.GGUF, "--min-cosine", "2")
}

func TestDiffQTensorsAndOtherDTypes(t *testing.T) {
	f := fixtures(t)
	r := diffOf(t, exitOK, f.HF, f.ApsimQ)
	for _, d := range r.Tensors.Compared {
		if !d.Compared {
			t.Errorf("%s (%s → %s) was not compared: %s", d.Name, d.DTypeA, d.DTypeB, d.Reason)
		}
		if d.DTypeB == "qt_int8" && (d.Cosine < 0.999 || d.RMSE == 0) {
			t.Errorf("%s: int8 QTensor cosine %v, rmse %v", d.Name, d.Cosine, d.RMSE)
		}
	}
	// Two quantizations compared with each other, both sides decoded.
	r = diffOf(t, exitOK, f.GGUF, f.ApsimQ, "--ignore-metadata")
	if r.Summary.WorstCosine == nil || r.Summary.WorstCosine.Value < 0.999 {
		t.Errorf("q8_0 against int8: %+v", r.Summary)
	}
}

// f32File writes a safetensors file of f32 tensors, each given as its shape
// and values.
func f32File(t *testing.T, path string, tensors ...any) {
	t.Helper()
	var header []string
	var data bytes.Buffer
	for i := 0; i < len(tensors); i += 3 {
		name := tensors[i].(string)
		shape := tensors[i+1].([]int)
		vals := tensors[i+2].([]float32)
		start := data.Len()
		for _, v := range vals {
			binary.Write(&data, binary.LittleEndian, v)
		}
		dims := make([]string, len(shape))
		for k, d := range shape {
			dims[k] = fmt.Sprint(d)
		}
		header = append(header, fmt.Sprintf(`%q:{"dtype":"F32","shape":[%s],"data_offsets":[%d,%d]}`, name, strings.Join(dims, ","), start, data.Len()))
	}
	h := "{" + strings.Join(header, ",") + "}"
	for len(h)%8 != 0 {
		h += " "
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.WriteString(h)
	b.Write(data.Bytes())
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiffStructure(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
	nan := float32(math.NaN())
	f32File(t, a,
		"same", []int{2, 2}, []float32{1, 2, 3, 4},
		"reshaped", []int{2, 2}, []float32{1, 2, 3, 4},
		"squeezed", []int{1, 4}, []float32{1, 2, 3, 4},
		"gone", []int{1}, []float32{1},
		"nan", []int{2}, []float32{1, nan},
		"bothnan", []int{2}, []float32{nan, 2},
		"scaled", []int{4}, []float32{1, -2, 3, -4},
	)
	f32File(t, b,
		"same", []int{2, 2}, []float32{1, 2, 3, 4},
		"reshaped", []int{4}, []float32{1, 2, 3, 4},
		"squeezed", []int{4}, []float32{1, 2, 3, 4},
		"new", []int{1}, []float32{1},
		"nan", []int{2}, []float32{nan, nan},
		"bothnan", []int{2}, []float32{nan, 2},
		"scaled", []int{4}, []float32{2, -4, 6, -8},
	)
	r := diffOf(t, exitDiffers, a, b)
	if strings.Join(r.Tensors.OnlyInA, ",") != "gone" || strings.Join(r.Tensors.OnlyInB, ",") != "new" {
		t.Errorf("only in A %v, only in B %v", r.Tensors.OnlyInA, r.Tensors.OnlyInB)
	}
	byName := map[string]*diffTensor{}
	for _, d := range r.Tensors.Compared {
		byName[d.Name] = d
	}
	if d := byName["same"]; !d.Identical || len(d.Failed) != 0 {
		t.Errorf("same: %+v", d)
	}
	if d := byName["reshaped"]; d.Compared || !strings.Contains(d.Reason, "shape [2, 2] → [4]") || len(d.Failed) == 0 {
		t.Errorf("a shape change must not be compared and must fail: %+v", d)
	}
	if d := byName["squeezed"]; !d.Compared || d.MaxAbs != 0 || len(d.Failed) != 0 {
		t.Errorf("[1, 4] against [4] compares as equal: %+v", d)
	}
	if d := byName["nan"]; d.NonFinite != 1 || len(d.Failed) == 0 {
		t.Errorf("a NaN on one side only must fail: %+v", d)
	}
	if d := byName["bothnan"]; d.NonFinite != 0 || len(d.Failed) != 0 || !d.Identical {
		t.Errorf("NaN on both sides is no difference: %+v", d)
	}
	d := byName["scaled"]
	// B = 2·A: cosine 1, max abs 4, RMSE = sqrt((1+4+9+16)/4), relative RMSE 1.
	if math.Abs(float64(d.Cosine)-1) > 1e-12 || d.MaxAbs != 4 || d.MaxAbsIndex != 3 ||
		math.Abs(float64(d.RMSE)-math.Sqrt(7.5)) > 1e-12 || math.Abs(float64(d.RelRMSE)-1) > 1e-12 || len(d.Failed) != 0 {
		t.Errorf("scaled: cosine %v, max abs %v at %d, rmse %v, rel %v, failed %v", d.Cosine, d.MaxAbs, d.MaxAbsIndex, d.RMSE, d.RelRMSE, d.Failed)
	}
	text, _ := sluiceCode(t, exitDiffers, "diff", a, b)
	golden(t, "diff-structure.txt", text, dir, "$DIR")
	out, _ := sluiceCode(t, exitDiffers, "diff", a, b, "--json")
	golden(t, "diff-structure.json", out, dir, "$DIR")
	// --only narrows the comparison.
	sluiceCode(t, exitOK, "diff", a, b, "--only", "s*", "--only", "bothnan", "--max-abs", "4", "-q")
	sluiceCode(t, exitBadConfig, "diff", a, b, "--only", "zzz*")
}

// TestDiffStreamsInBoundedMemory compares two 128 MiB tensors: the
// comparison must not hold either one in memory.
func TestDiffStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	dir := t.TempDir()
	const n = 32 << 20 // f32 elements: 128 MiB
	for _, name := range []string{"a.safetensors", "b.safetensors"} {
		head := fmt.Sprintf(`{"big":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n, 4*n)
		for len(head)%8 != 0 {
			head += " "
		}
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, uint64(len(head)))
		b.WriteString(head)
		writeSparse(t, filepath.Join(dir, name), b.Bytes(), int64(b.Len())+4*n)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := diffOf(t, exitOK, filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors"), "--max-abs", "0")
	runtime.ReadMemStats(&after)
	if r.Summary.Identical != 1 || r.Tensors.Compared[0].Elements != n {
		t.Fatalf("%+v", r.Summary)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("diff of two 128 MiB tensors allocated %d MiB in all", alloc>>20)
	if alloc > 64<<20 {
		t.Errorf("diff allocated %d MiB for two 128 MiB tensors: it does not stream", alloc>>20)
	}
}
