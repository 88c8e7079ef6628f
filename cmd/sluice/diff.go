package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/plugins/apr"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// diffSchema names the version of diff's --json output.
const diffSchema = "sluice.diff/v1"

// exitDiffers is diff's exit code when the checkpoints differ beyond what
// the flags allow.
const exitDiffers = 4

// diffChunk is the number of elements compared at a time per tensor.
const diffChunk = 1 << 18

type diffFlags struct {
	maxAbs, maxRMSE, maxRelRMSE, minCosine float64
	strict, ignoreMetadata, isolate        bool
	only                                   []string
}

func (a *app) diffCommand() *cobra.Command {
	var df diffFlags
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two checkpoints tensor by tensor: structure, metadata and values",
		Long: `diff compares two checkpoints of any formats. It reports tensors that are
missing or extra, dtype and shape changes and metadata changes, and for every
tensor present in both: whether the bytes are identical, the largest
absolute error, the RMSE, the RMSE relative to A's RMS, and the cosine
similarity, dequantizing both sides to float32 as needed (ggml block types,
apsim QTensors, APR q4/q8).

Data streams through in chunks of 256 Ki elements per tensor (QTensors and
APR q4/q8 are decoded a tensor at a time), so memory stays bounded however
large the checkpoints are.

The exit code makes it a CI gate: 0 when the checkpoints agree, 4 when they
differ beyond what is allowed: a tensor missing on either side, a shape
change, a NaN or infinity on one side only, or a tensor past a threshold
(--max-abs, --max-rmse, --max-rel-rmse, --min-cosine). Without thresholds any
value difference is allowed; --strict allows none (bytes, dtypes and
metadata must be identical). 3 means an input could not be read.`,
		Example: `  sluice diff model-f16.gguf model-q4_k_m.gguf --min-cosine 0.995
  sluice diff ./Llama-3-8B model.safetensors --strict
  sluice diff old.apsim new.apsim --json > drift.json
  sluice diff a.gguf b.gguf --only 'blk.0.*' --max-rel-rmse 0.05`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDiff(cmd, args[0], args[1], df)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&df.maxAbs, "max-abs", 0, "fail when a tensor's largest absolute difference exceeds this")
	f.Float64Var(&df.maxRMSE, "max-rmse", 0, "fail when a tensor's RMSE exceeds this")
	f.Float64Var(&df.maxRelRMSE, "max-rel-rmse", 0, "fail when a tensor's RMSE divided by the RMS of its A side exceeds this")
	f.Float64Var(&df.minCosine, "min-cosine", 0, "fail when a tensor's cosine similarity is below this")
	f.BoolVar(&df.strict, "strict", false, "fail on any difference: bytes, dtypes and metadata must be identical")
	f.BoolVar(&df.ignoreMetadata, "ignore-metadata", false, "do not compare metadata")
	f.StringSliceVar(&df.only, "only", nil, "compare only tensors whose names match these globs (path.Match syntax; repeatable)")
	f.BoolVar(&df.isolate, "isolate", false, "run format plugins as their own processes instead of inside sluice")
	return cmd
}

// diffReport is the result of diff, schema sluice.diff/v1.
type diffReport struct {
	Schema     string             `json:"schema"`
	A          diffSide           `json:"a"`
	B          diffSide           `json:"b"`
	OK         bool               `json:"ok"`
	Thresholds map[string]float64 `json:"thresholds"`
	Metadata   *diffMetadata      `json:"metadata,omitempty"`
	Tensors    diffTensors        `json:"tensors"`
	Summary    diffSummary        `json:"summary"`
	Failures   []string           `json:"failures"`
}

type diffSide struct {
	Path       string `json:"path"`
	Format     string `json:"format"`
	Tensors    int    `json:"tensors"`
	Parameters uint64 `json:"parameters"`
	Bytes      uint64 `json:"bytes"`
}

type diffMetadata struct {
	OnlyInA []infoMetadata  `json:"only_in_a"`
	OnlyInB []infoMetadata  `json:"only_in_b"`
	Changed []diffMetaValue `json:"changed"`
}

type diffMetaValue struct {
	Key string       `json:"key"`
	A   infoMetadata `json:"a"`
	B   infoMetadata `json:"b"`
}

type diffTensors struct {
	OnlyInA  []string      `json:"only_in_a"`
	OnlyInB  []string      `json:"only_in_b"`
	Compared []*diffTensor `json:"compared"`
}

// diffTensor is the comparison of one tensor present in both checkpoints.
type diffTensor struct {
	Name      string   `json:"name"`
	DTypeA    string   `json:"dtype_a"`
	DTypeB    string   `json:"dtype_b"`
	ShapeA    []uint64 `json:"shape_a"`
	ShapeB    []uint64 `json:"shape_b"`
	Elements  uint64   `json:"elements"`
	Identical bool     `json:"identical"`
	// Compared is false when the values could not be compared (a shape
	// change, a dtype that cannot be decoded); Reason says why.
	Compared bool      `json:"compared"`
	Reason   string    `json:"reason,omitempty"`
	MaxAbs   jsonFloat `json:"max_abs"`
	// MaxAbsIndex is the flat row-major index of the largest difference.
	MaxAbsIndex uint64    `json:"max_abs_index"`
	RMSE        jsonFloat `json:"rmse"`
	RelRMSE     jsonFloat `json:"rel_rmse"`
	Cosine      jsonFloat `json:"cosine"`
	// NonFinite counts elements where one side is NaN or infinite and the
	// other is not the same non-finite value.
	NonFinite uint64 `json:"nonfinite_mismatches"`
	// Failed lists the limits this tensor broke.
	Failed []string `json:"failed,omitempty"`
}

type diffSummary struct {
	Compared    int        `json:"compared"`
	Identical   int        `json:"identical"`
	Failed      int        `json:"failed"`
	WorstCosine *diffWorst `json:"worst_cosine,omitempty"`
	MaxRMSE     *diffWorst `json:"max_rmse,omitempty"`
	MaxRelRMSE  *diffWorst `json:"max_rel_rmse,omitempty"`
	MaxAbs      *diffWorst `json:"max_abs,omitempty"`
}

type diffWorst struct {
	Tensor string    `json:"tensor"`
	Value  jsonFloat `json:"value"`
}

// jsonFloat is a float64 that encodes NaN and infinities as null.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func (a *app) runDiff(cmd *cobra.Command, pa, pb string, df diffFlags) error {
	for _, g := range df.only {
		if _, err := path.Match(g, ""); err != nil {
			return configErr(fmt.Errorf("--only %q: %v", g, err))
		}
	}
	for name, v := range map[string]float64{"--max-abs": df.maxAbs, "--max-rmse": df.maxRMSE, "--max-rel-rmse": df.maxRelRMSE, "--min-cosine": df.minCosine} {
		if v < 0 || math.IsNaN(v) || name == "--min-cosine" && v > 1 {
			return configErr(fmt.Errorf("%s %v is out of range", name, v))
		}
	}
	ctx := cmd.Context()
	h := a.inspectHost(df.isolate)
	defer h.Close()
	ca, err := openCheckpoint(ctx, h, pa)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := openCheckpoint(ctx, h, pb)
	if err != nil {
		return err
	}
	defer cb.Close()

	r := &diffReport{Schema: diffSchema, A: sideOf(ca), B: sideOf(cb), Thresholds: map[string]float64{}, Failures: []string{}}
	fl := cmd.Flags()
	for flag, key := range map[string]string{"max-abs": "max_abs", "max-rmse": "max_rmse", "max-rel-rmse": "max_rel_rmse", "min-cosine": "min_cosine"} {
		if fl.Changed(flag) {
			v, _ := fl.GetFloat64(flag)
			r.Thresholds[key] = v
		}
	}
	if !df.ignoreMetadata {
		r.Metadata = diffMeta(&ca.Manifest.Metadata, &cb.Manifest.Metadata)
	}
	selected := func(name string) bool {
		if len(df.only) == 0 {
			return true
		}
		for _, g := range df.only {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
		return false
	}
	idxB := cb.Manifest.Index()
	inA := map[string]bool{}
	r.Tensors = diffTensors{OnlyInA: []string{}, OnlyInB: []string{}, Compared: []*diffTensor{}}
	type pair struct {
		ta, tb *tensor.TensorInfo
		d      *diffTensor
	}
	var pairs []pair
	var total uint64
	for i := range ca.Manifest.Tensors {
		ta := &ca.Manifest.Tensors[i]
		if !selected(ta.Name) {
			continue
		}
		inA[ta.Name] = true
		j, ok := idxB[ta.Name]
		if !ok {
			r.Tensors.OnlyInA = append(r.Tensors.OnlyInA, ta.Name)
			continue
		}
		tb := &cb.Manifest.Tensors[j]
		d := &diffTensor{Name: ta.Name, DTypeA: string(ta.DType), DTypeB: string(tb.DType), ShapeA: nonNil(ta.Shape), ShapeB: nonNil(tb.Shape)}
		d.Elements, _ = ta.Elements()
		r.Tensors.Compared = append(r.Tensors.Compared, d)
		pairs = append(pairs, pair{ta, tb, d})
		total += ta.Size + tb.Size
	}
	for i := range cb.Manifest.Tensors {
		if n := cb.Manifest.Tensors[i].Name; selected(n) && !inA[n] {
			r.Tensors.OnlyInB = append(r.Tensors.OnlyInB, n)
		}
	}
	if len(df.only) > 0 && len(pairs)+len(r.Tensors.OnlyInA)+len(r.Tensors.OnlyInB) == 0 {
		return configErr(fmt.Errorf("--only %s matches no tensor of either checkpoint", strings.Join(df.only, ", ")))
	}

	prog := a.diffProgress()
	prog.Start(total, len(pairs))
	workers := a.workerCount()
	jobs := make(chan pair)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmp := newComparer()
			for p := range jobs {
				if err := cmp.compare(ctx, ca, cb, p.ta, p.tb, p.d, prog); err != nil {
					errs <- err
					cancel()
					return
				}
				prog.TensorDone(p.ta.Name)
			}
		}()
	}
feed:
	for _, p := range pairs {
		select {
		case jobs <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		prog.finish(false)
		return err
	}
	if err := cmd.Context().Err(); err != nil {
		prog.finish(false)
		return err
	}
	prog.finish(true)
	r.judge(df)
	if a.json {
		if err := writeJSON(a.stdout, r); err != nil {
			return err
		}
	} else {
		r.print(a.stdout, a.quiet)
	}
	if !r.OK {
		return reported(exitDiffers, errors.New("the checkpoints differ"))
	}
	return nil
}

// diffProgress reports diff's progress on stderr: a bar on a terminal,
// plain lines otherwise, nothing with --quiet. With --json the report owns
// stdout, so progress stays on stderr.
func (a *app) diffProgress() *progress {
	p := a.newProgress()
	if p.mode == "json" {
		p.mode, p.w = "lines", a.stderr
	}
	return p
}

func sideOf(c *checkpoint) diffSide {
	return diffSide{Path: c.Arg, Format: c.Format, Tensors: len(c.Manifest.Tensors), Parameters: c.Manifest.Params(), Bytes: c.Manifest.TotalSize()}
}

// diffMeta compares metadata key by key.
func diffMeta(ma, mb *tensor.Metadata) *diffMetadata {
	d := &diffMetadata{OnlyInA: []infoMetadata{}, OnlyInB: []infoMetadata{}, Changed: []diffMetaValue{}}
	ma.All(func(k string, va tensor.Value) bool {
		vb, ok := mb.Get(k)
		switch {
		case !ok:
			d.OnlyInA = append(d.OnlyInA, metadataJSON(k, va, false))
		case va.Type() != vb.Type() || va.Elem() != vb.Elem() || !va.Equal(vb):
			d.Changed = append(d.Changed, diffMetaValue{Key: k, A: metadataJSON(k, va, false), B: metadataJSON(k, vb, false)})
		}
		return true
	})
	mb.All(func(k string, vb tensor.Value) bool {
		if _, ok := ma.Get(k); !ok {
			d.OnlyInB = append(d.OnlyInB, metadataJSON(k, vb, false))
		}
		return true
	})
	return d
}

// judge applies the limits and fills the summary.
func (r *diffReport) judge(df diffFlags) {
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	for _, n := range r.Tensors.OnlyInA {
		fail("%s: only in A", n)
	}
	for _, n := range r.Tensors.OnlyInB {
		fail("%s: only in B", n)
	}
	if df.strict && r.Metadata != nil {
		for _, m := range r.Metadata.OnlyInA {
			fail("metadata %s: only in A", m.Key)
		}
		for _, m := range r.Metadata.OnlyInB {
			fail("metadata %s: only in B", m.Key)
		}
		for _, m := range r.Metadata.Changed {
			fail("metadata %s: changed", m.Key)
		}
	}
	s := &r.Summary
	worse := func(w **diffWorst, name string, v float64, higher bool) {
		if math.IsNaN(v) {
			return
		}
		if *w == nil || (higher && v > float64((*w).Value)) || (!higher && v < float64((*w).Value)) {
			*w = &diffWorst{Tensor: name, Value: jsonFloat(v)}
		}
	}
	thresholds := len(r.Thresholds) > 0
	for _, d := range r.Tensors.Compared {
		s.Compared++
		if d.Identical {
			s.Identical++
		}
		tfail := func(format string, args ...any) { d.Failed = append(d.Failed, fmt.Sprintf(format, args...)) }
		switch {
		case !d.Compared && !slices.Equal(squeeze(d.ShapeA), squeeze(d.ShapeB)):
			tfail("%s", d.Reason)
		case !d.Compared && !d.Identical && (thresholds || df.strict):
			tfail("%s, so the values cannot be checked", d.Reason)
		case d.Compared:
			if d.NonFinite > 0 {
				tfail("%d element(s) NaN or infinite on one side only", d.NonFinite)
			}
			if v, ok := r.Thresholds["max_abs"]; ok && !(float64(d.MaxAbs) <= v) {
				tfail("max abs %s > --max-abs %g", fmtFloat(float64(d.MaxAbs)), v)
			}
			if v, ok := r.Thresholds["max_rmse"]; ok && !(float64(d.RMSE) <= v) {
				tfail("RMSE %s > --max-rmse %g", fmtFloat(float64(d.RMSE)), v)
			}
			if v, ok := r.Thresholds["max_rel_rmse"]; ok && !(float64(d.RelRMSE) <= v) {
				tfail("relative RMSE %s > --max-rel-rmse %g", fmtFloat(float64(d.RelRMSE)), v)
			}
			if v, ok := r.Thresholds["min_cosine"]; ok && !(float64(d.Cosine) >= v) {
				tfail("cosine %s < --min-cosine %g", fmtFloat(float64(d.Cosine)), v)
			}
			worse(&s.WorstCosine, d.Name, float64(d.Cosine), false)
			worse(&s.MaxRMSE, d.Name, float64(d.RMSE), true)
			worse(&s.MaxRelRMSE, d.Name, float64(d.RelRMSE), true)
			worse(&s.MaxAbs, d.Name, float64(d.MaxAbs), true)
		}
		if df.strict && !d.Identical {
			if d.DTypeA != d.DTypeB {
				tfail("dtype %s → %s", d.DTypeA, d.DTypeB)
			} else {
				tfail("bytes differ (--strict)")
			}
		}
		if len(d.Failed) > 0 {
			s.Failed++
			for _, f := range d.Failed {
				fail("%s: %s", d.Name, f)
			}
		}
	}
	r.OK = len(r.Failures) == 0
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.6g", v)
}

func (r *diffReport) print(w io.Writer, quiet bool) {
	if quiet {
		for _, f := range r.Failures {
			fmt.Fprintln(w, "FAIL", f)
		}
		return
	}
	for _, s := range []struct {
		label string
		d     diffSide
	}{{"A", r.A}, {"B", r.B}} {
		fmt.Fprintf(w, "%s: %s (%s, %d tensors, %s parameters)\n", s.label, s.d.Path, s.d.Format, s.d.Tensors, humanCount(s.d.Parameters))
	}
	if m := r.Metadata; m != nil && len(m.OnlyInA)+len(m.OnlyInB)+len(m.Changed) > 0 {
		fmt.Fprintln(w, "\nmetadata:")
		short := func(e infoMetadata) string {
			s := fmt.Sprint(e.Value)
			if b, err := json.Marshal(e.Value); err == nil {
				s = string(b)
			}
			if len(s) > 60 {
				s = cutUTF8(s, 57) + "…"
			}
			return e.Type + " " + s
		}
		for _, e := range m.OnlyInA {
			fmt.Fprintf(w, "  - %s = %s (only in A)\n", e.Key, short(e))
		}
		for _, e := range m.OnlyInB {
			fmt.Fprintf(w, "  + %s = %s (only in B)\n", e.Key, short(e))
		}
		for _, e := range m.Changed {
			fmt.Fprintf(w, "  ~ %s: %s → %s\n", e.Key, short(e.A), short(e.B))
		}
	}
	fmt.Fprintln(w, "\ntensors:")
	for _, n := range r.Tensors.OnlyInA {
		fmt.Fprintf(w, "  - %s (only in A)\n", n)
	}
	for _, n := range r.Tensors.OnlyInB {
		fmt.Fprintf(w, "  + %s (only in B)\n", n)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  TENSOR\tDTYPE\tMAX ABS\tRMSE\tREL RMSE\tCOSINE\t")
	for _, d := range r.Tensors.Compared {
		dt := d.DTypeA
		if d.DTypeB != d.DTypeA {
			dt += " → " + d.DTypeB
		}
		mark := ""
		if len(d.Failed) > 0 {
			mark = "FAIL: " + strings.Join(d.Failed, "; ")
		}
		switch {
		case d.Identical:
			fmt.Fprintf(tw, "  %s\t%s\tidentical\t\t\t\t%s\n", d.Name, dt, mark)
		case !d.Compared:
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\t\t\t%s\n", d.Name, dt, d.Reason, mark)
		default:
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Name, dt, fmtFloat(float64(d.MaxAbs)), fmtFloat(float64(d.RMSE)), fmtFloat(float64(d.RelRMSE)), fmtFloat(float64(d.Cosine)), mark)
		}
	}
	tw.Flush()
	s := r.Summary
	fmt.Fprintf(w, "\n%d tensors compared, %d identical", s.Compared, s.Identical)
	if n := len(r.Tensors.OnlyInA) + len(r.Tensors.OnlyInB); n > 0 {
		fmt.Fprintf(w, ", %d only in A, %d only in B", len(r.Tensors.OnlyInA), len(r.Tensors.OnlyInB))
	}
	if s.WorstCosine != nil {
		fmt.Fprintf(w, "; worst cosine %s (%s), largest RMSE %s (%s)", fmtFloat(float64(s.WorstCosine.Value)), s.WorstCosine.Tensor, fmtFloat(float64(s.MaxRMSE.Value)), s.MaxRMSE.Tensor)
	}
	fmt.Fprintln(w)
	if r.OK {
		fmt.Fprintln(w, "OK: within the limits")
		return
	}
	fmt.Fprintf(w, "FAILED: %d difference(s) beyond the limits\n", len(r.Failures))
	for i, f := range r.Failures {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more (--json lists them all)\n", len(r.Failures)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// squeeze drops dimensions of size 1, so [1, 64] and [64] compare equal
// (GGUF drops such dimensions).
func squeeze(s []uint64) []uint64 {
	out := make([]uint64, 0, len(s))
	for _, d := range s {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
}

// comparer holds one worker's buffers.
type comparer struct {
	fa, fb []float32
}

func newComparer() *comparer {
	return &comparer{fa: make([]float32, diffChunk), fb: make([]float32, diffChunk)}
}

// compare streams both tensors and fills d.
func (c *comparer) compare(ctx context.Context, ca, cb *checkpoint, ta, tb *tensor.TensorInfo, d *diffTensor, prog *progress) error {
	if !slices.Equal(squeeze(ta.Shape), squeeze(tb.Shape)) {
		d.Reason = fmt.Sprintf("shape %s → %s", shapeText(ta.Shape), shapeText(tb.Shape))
		prog.Advance(ta.Size + tb.Size)
		return nil
	}
	sa, err := openFloats(ctx, ca, ta)
	if err != nil {
		return err
	}
	defer sa.Close()
	sb, err := openFloats(ctx, cb, tb)
	if err != nil {
		return err
	}
	defer sb.Close()
	if !sa.decodes || !sb.decodes {
		// Only the bytes can be compared.
		dt := ta.DType
		if sa.decodes {
			dt = tb.DType
		}
		d.Reason = fmt.Sprintf("dtype %s cannot be decoded", dt)
		if ta.DType == tb.DType && ta.Size == tb.Size {
			eq, err := sameBytes(sa.raw, sb.raw)
			if err != nil {
				return err
			}
			d.Identical = eq
		}
		prog.Advance(ta.Size + tb.Size)
		return nil
	}
	unit := lcm(sa.unit, sb.unit)
	chunk := max(diffChunk/unit*unit, unit)
	if uint64(len(c.fa)) < chunk {
		c.fa, c.fb = make([]float32, chunk), make([]float32, chunk)
	}
	var st stats
	for done := uint64(0); done < d.Elements; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, d.Elements-done)
		if err := sa.next(c.fa[:n]); err != nil {
			return err
		}
		if err := sb.next(c.fb[:n]); err != nil {
			return err
		}
		st.add(c.fa[:n], c.fb[:n], done)
		done += n
		prog.Advance(sa.take() + sb.take())
	}
	if err := sa.finish(); err != nil {
		return err
	}
	if err := sb.finish(); err != nil {
		return err
	}
	d.Compared = true
	d.Identical = ta.DType == tb.DType && ta.Size == tb.Size && bytes.Equal(sa.sum(), sb.sum())
	st.fill(d)
	return nil
}

// stats accumulates the error statistics of one tensor in float64.
type stats struct {
	n, nonFinite       uint64
	sumSq, dot, na, nb float64
	maxAbs             float64
	maxAt              uint64
}

func (s *stats) add(a, b []float32, base uint64) {
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			if !(math.IsNaN(x) && math.IsNaN(y)) && x != y {
				s.nonFinite++
			}
			continue
		}
		dd := x - y
		if ad := math.Abs(dd); ad > s.maxAbs {
			s.maxAbs, s.maxAt = ad, base+uint64(i)
		}
		s.sumSq += dd * dd
		s.dot += x * y
		s.na += x * x
		s.nb += y * y
		s.n++
	}
}

func (s *stats) fill(d *diffTensor) {
	d.NonFinite = s.nonFinite
	d.MaxAbs, d.MaxAbsIndex = jsonFloat(s.maxAbs), s.maxAt
	if s.n == 0 {
		d.RMSE, d.RelRMSE, d.Cosine = jsonFloat(math.NaN()), jsonFloat(math.NaN()), jsonFloat(math.NaN())
		if s.nonFinite == 0 {
			d.RMSE, d.RelRMSE, d.Cosine = 0, 0, 1
		}
		return
	}
	rmse := math.Sqrt(s.sumSq / float64(s.n))
	d.RMSE = jsonFloat(rmse)
	switch rms := math.Sqrt(s.na / float64(s.n)); {
	case rmse == 0:
		d.RelRMSE = 0
	case rms == 0:
		d.RelRMSE = jsonFloat(math.Inf(1))
	default:
		d.RelRMSE = jsonFloat(rmse / rms)
	}
	switch {
	case s.sumSq == 0 && s.na == s.nb:
		d.Cosine = 1 // equal values; the quotient below could round below 1
	case s.na == 0 && s.nb == 0:
		d.Cosine = 1
	case s.na == 0 || s.nb == 0:
		d.Cosine = 0
	default:
		d.Cosine = jsonFloat(math.Max(-1, math.Min(1, s.dot/math.Sqrt(s.na)/math.Sqrt(s.nb))))
	}
}

func lcm(a, b uint64) uint64 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// floatStream yields a tensor's values as float32, front to back, and hashes
// its raw bytes.
type floatStream struct {
	raw     io.ReadCloser
	name    string
	dtype   tensor.DType
	decodes bool
	unit    uint64 // elements per decode step
	whole   []float32
	pos     uint64
	buf     []byte
	h       hash.Hash
	read    uint64 // bytes read since the last take
	size    uint64
}

// openFloats opens a tensor's bytes: from its file when the source gave a
// location, else through the source.
func openFloats(ctx context.Context, c *checkpoint, t *tensor.TensorInfo) (*floatStream, error) {
	var raw io.ReadCloser
	if loc := t.Location; loc != nil {
		f, err := os.Open(loc.Path)
		if err != nil {
			return nil, &inputError{path: loc.Path, err: err}
		}
		raw = struct {
			io.Reader
			io.Closer
		}{io.NewSectionReader(f, int64(loc.Offset), int64(loc.Length)), f}
	} else {
		r, err := c.Source.Open(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		raw = r
	}
	s := &floatStream{raw: raw, name: t.Name, dtype: t.DType, h: sha256.New(), size: t.Size}
	n, _ := t.Elements()
	switch {
	case codec.CanDecode(t.DType):
		bs, _ := codec.BlockSize(t.DType)
		s.decodes, s.unit = true, uint64(bs)
	case codec.IsQTensor(t.DType) || t.DType == apr.Q4 || t.DType == apr.Q8:
		// Decoded a tensor at a time: their scales are laid out by shape.
		b, err := s.readAll(c.Arg)
		if err != nil {
			raw.Close()
			return nil, err
		}
		var vals []float32
		switch t.DType {
		case apr.Q4:
			vals, err = apr.DecodeQ4(b, int(n))
		case apr.Q8:
			vals, err = apr.DecodeQ8(b, int(n))
		default:
			vals = make([]float32, n)
			err = codec.DecodeQTensor(t, vals, b)
		}
		if err != nil {
			raw.Close()
			return nil, &inputError{path: c.Arg, err: fmt.Errorf("tensor %q: %w", t.Name, err)}
		}
		s.whole, s.decodes, s.unit = vals, true, 1
	}
	return s, nil
}

func (s *floatStream) readAll(file string) ([]byte, error) {
	b := make([]byte, s.size)
	if _, err := io.ReadFull(s.raw, b); err != nil {
		return nil, &inputError{path: file, err: fmt.Errorf("tensor %q: reading %d bytes: %w", s.name, s.size, err)}
	}
	s.h.Write(b)
	s.read += s.size
	return b, nil
}

// next fills dst with the next len(dst) values; len(dst) is a multiple of
// the stream's unit unless it is the tensor's tail.
func (s *floatStream) next(dst []float32) error {
	if s.whole != nil {
		copy(dst, s.whole[s.pos:])
		s.pos += uint64(len(dst))
		return nil
	}
	nb, err := s.dtype.ByteSize(uint64(len(dst)))
	if err != nil {
		return fmt.Errorf("tensor %q: %w", s.name, err)
	}
	if uint64(cap(s.buf)) < nb {
		s.buf = make([]byte, nb)
	}
	b := s.buf[:nb]
	if _, err := io.ReadFull(s.raw, b); err != nil {
		return &inputError{path: s.name, err: fmt.Errorf("reading tensor data: %w", err)}
	}
	s.h.Write(b)
	s.read += nb
	if err := codec.DecodeFloat32(s.dtype, dst, b); err != nil {
		return fmt.Errorf("tensor %q: %w", s.name, err)
	}
	s.pos += uint64(len(dst))
	return nil
}

// take returns the bytes read since the last call, for progress.
func (s *floatStream) take() uint64 {
	n := s.read
	s.read = 0
	return n
}

// finish checks that the tensor held no more bytes than its size.
func (s *floatStream) finish() error {
	if s.whole != nil {
		return nil
	}
	var one [1]byte
	if n, _ := s.raw.Read(one[:]); n > 0 {
		return &inputError{path: s.name, err: fmt.Errorf("tensor data is longer than its %d bytes", s.size)}
	}
	return nil
}

func (s *floatStream) sum() []byte { return s.h.Sum(nil) }

func (s *floatStream) Close() error { return s.raw.Close() }

// sameBytes compares two readers to the end.
func sameBytes(a, b io.Reader) (bool, error) {
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		endA := ea == io.EOF || ea == io.ErrUnexpectedEOF
		endB := eb == io.EOF || eb == io.ErrUnexpectedEOF
		switch {
		case endA && endB:
			return true, nil
		case endA != endB:
			return false, nil
		case ea != nil:
			return false, ea
		case eb != nil:
			return false, eb
		}
	}
}
