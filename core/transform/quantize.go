package transform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("quantize", Factory{
		Doc: "Converts tensors to another dtype — a ggml block type (q8_0, q4_K …), an apsim QTensor format " +
			"(int8, int4, fp8, fp6, fp4 with scales per tensor, axis or block) or a float type — chosen per tensor " +
			"by rules (first match wins), a llama.cpp preset (Q4_K_M …) or one type. Integer tensors are left alone " +
			"unless convert_integers is set, and 1-D tensors unless a rule names them.",
		Spec: hcldec.ObjectSpec{
			"type":             &hcldec.AttrSpec{Name: "type", Type: cty.String},
			"preset":           &hcldec.AttrSpec{Name: "preset", Type: cty.String},
			"fallback_type":    &hcldec.AttrSpec{Name: "fallback_type", Type: cty.String},
			"axis":             &hcldec.AttrSpec{Name: "axis", Type: cty.Number},
			"block":            &hcldec.AttrSpec{Name: "block", Type: cty.Number},
			"convert_integers": &hcldec.AttrSpec{Name: "convert_integers", Type: cty.Bool},
			"rule": &hcldec.BlockListSpec{TypeName: "rule", Nested: hcldec.ObjectSpec{
				"match":        &hcldec.AttrSpec{Name: "match", Type: cty.List(cty.String)},
				"min_dims":     &hcldec.AttrSpec{Name: "min_dims", Type: cty.Number},
				"max_dims":     &hcldec.AttrSpec{Name: "max_dims", Type: cty.Number},
				"min_elements": &hcldec.AttrSpec{Name: "min_elements", Type: cty.Number},
				"type":         &hcldec.AttrSpec{Name: "type", Type: cty.String, Required: true},
				"axis":         &hcldec.AttrSpec{Name: "axis", Type: cty.Number},
				"block":        &hcldec.AttrSpec{Name: "block", Type: cty.Number},
			}},
		},
		New: newQuantize,
	})
}

// rule picks a type for the tensors it matches.
type rule struct {
	n           int // 1-based, for plans
	match       globs
	minDims     int
	maxDims     int // -1: no limit
	minElements uint64
	to          target
}

func (r *rule) matches(t *tensor.TensorInfo) bool {
	if !r.match.matchOrAll(t.Name) {
		return false
	}
	d := len(t.Shape)
	if d < r.minDims || (r.maxDims >= 0 && d > r.maxDims) {
		return false
	}
	if r.minElements > 0 {
		n, err := t.Elements()
		if err != nil || n < r.minElements {
			return false
		}
	}
	return true
}

func (r *rule) String() string {
	var parts []string
	if !r.match.empty() {
		parts = append(parts, fmt.Sprintf("match %q", r.match.patterns))
	}
	if r.minDims > 0 {
		parts = append(parts, fmt.Sprintf("min_dims %d", r.minDims))
	}
	if r.maxDims >= 0 {
		parts = append(parts, fmt.Sprintf("max_dims %d", r.maxDims))
	}
	if r.minElements > 0 {
		parts = append(parts, fmt.Sprintf("min_elements %d", r.minElements))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("rule %d", r.n)
	}
	return fmt.Sprintf("rule %d (%s)", r.n, strings.Join(parts, ", "))
}

type quantize struct {
	rules           []*rule
	def             target // zero dtype and !keep: no default type
	hasDef          bool
	preset          *preset
	fallback        *target
	convertIntegers bool
}

func parseRules(a attrs) ([]*rule, error) {
	var rules []*rule
	for i, b := range a.blocks("rule") {
		r := &rule{n: i + 1, maxDims: -1}
		g, err := compileGlobs("match", b.strings("match"))
		if err != nil {
			return nil, err
		}
		g.aliases = true
		r.match = g
		if n, ok, err := b.integer("min_dims", 0, 64); err != nil {
			return nil, err
		} else if ok {
			r.minDims = int(n)
		}
		if n, ok, err := b.integer("max_dims", 0, 64); err != nil {
			return nil, err
		} else if ok {
			r.maxDims = int(n)
		}
		if n, ok, err := b.integer("min_elements", 0, 1<<62); err != nil {
			return nil, err
		} else if ok {
			r.minElements = uint64(n)
		}
		if r.maxDims >= 0 && r.minDims > r.maxDims {
			return nil, configErr(b, "max_dims", "max_dims %d is less than min_dims %d", r.maxDims, r.minDims)
		}
		if r.to, err = parseTarget(b.str("type"), b, "type"); err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func newQuantize(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	q := &quantize{convertIntegers: a.boolean("convert_integers")}
	var err error
	if q.rules, err = parseRules(a); err != nil {
		return nil, err
	}
	if a.has("type") && a.has("preset") {
		return nil, plugin.ConfigErrorf("preset", "set type or preset, not both (a preset chooses the types itself; add rules to override it)")
	}
	if a.has("type") {
		if q.def, err = parseTarget(a.str("type"), a, "type"); err != nil {
			return nil, err
		}
		q.hasDef = true
	} else if a.has("axis") || a.has("block") {
		return nil, plugin.ConfigErrorf("axis", "axis and block go with a QTensor type")
	}
	if a.has("preset") {
		p, ok := lookupPreset(a.str("preset"))
		if !ok {
			return nil, plugin.ConfigErrorf("preset", "unknown preset %q (known: %s)", a.str("preset"), strings.Join(presetNames(), ", "))
		}
		q.preset = &p
	}
	if a.has("fallback_type") {
		fb, err := parseTarget(a.str("fallback_type"), attrs{}, "fallback_type")
		if err != nil {
			return nil, err
		}
		q.fallback = &fb
	}
	if !q.hasDef && q.preset == nil && len(q.rules) == 0 {
		return nil, plugin.ConfigErrorf("", "say what to quantize to: type = \"q8_0\", preset = \"Q4_K_M\", or rule blocks")
	}
	return q, nil
}

// choice is the decision for one tensor.
type choice struct {
	to     target
	reason string
}

func (q *quantize) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	choices := make([]choice, len(in.Tensors))
	var all, presetList []presetTensor
	for i := range in.Tensors {
		t := &in.Tensors[i]
		pt := presetTensorOf(i, t)
		if pt.cat == catOutput && t.Attr(tensor.AttrTiedTo) != "" {
			pt.cat = catOther // a tied copy is not llama.cpp's output.weight
		}
		all = append(all, pt)
		c, toPreset := q.choose(t, pt)
		if toPreset {
			presetList = append(presetList, pt)
		}
		choices[i] = c
	}
	if q.preset != nil {
		// llama.cpp's choices depend on counters over the tensors in its
		// order, so they are made after the rules, in that order.
		st := newPresetState(*q.preset, readModelInfo(&in.Metadata), all)
		llamaOrder(presetList)
		for _, pt := range presetList {
			c, err := st.choose(pt)
			if err != nil {
				return nil, &TensorError{Tensor: in.Tensors[pt.index].Name, Msg: err.Error(), Input: true}
			}
			choices[pt.index] = choice{target{dtype: c.dtype}, c.reason}
		}
	}
	counts := map[string]int{}
	for i := range in.Tensors {
		t := &in.Tensors[i]
		msg, err := q.apply(p, i, t, choices[i])
		if err != nil {
			return nil, err
		}
		p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: msg})
		counts[string(p.Out.Tensors[i].DType)]++
	}
	p.Decisions = append([]plugin.Decision{{Msg: q.summary(counts)}}, p.Decisions...)
	if q.preset != nil {
		setFileType(&p.Out.Metadata, *q.preset)
	}
	return p, nil
}

// choose applies the fixed defaults and the rules to one tensor. It reports
// toPreset when the preset decides instead.
func (q *quantize) choose(t *tensor.TensorInfo, pt presetTensor) (c choice, toPreset bool) {
	keep := func(why string) choice { return choice{target{keep: true}, why} }
	switch {
	case !t.DType.Known():
		return keep(fmt.Sprintf("unknown dtype %q", t.DType)), false
	case isIntegerDType(t.DType) && !q.convertIntegers:
		return keep("integer tensor (set convert_integers = true to convert it)"), false
	}
	for _, r := range q.rules {
		if r.matches(t) {
			return choice{r.to, r.String()}, false
		}
	}
	switch {
	case len(t.Shape) < 2:
		return keep(fmt.Sprintf("%d-D tensor (a rule can still convert it)", len(t.Shape))), false
	case q.preset != nil:
		if ok, why := allowsQuantization(pt.name, len(t.Shape)); !ok {
			return keep("preset " + q.preset.name + ": " + why), false
		}
		return choice{}, true
	case q.hasDef:
		return choice{q.def, "type"}, false
	}
	return keep("no rule matches"), false
}

// apply turns a choice into the output tensor and its op, and returns the
// plan line.
func (q *quantize) apply(p *Plan, i int, t *tensor.TensorInfo, c choice) (string, error) {
	if c.to.keep {
		return fmt.Sprintf("kept %s: %s", t.DType, c.reason), nil
	}
	to := c.to
	reason := c.reason
	if !fits(to.dtype, t.Shape) {
		var fb target
		switch {
		case q.fallback != nil:
			fb = *q.fallback
			reason = fmt.Sprintf("%s chose %s, but rows of %d are not a whole number of its blocks of %d; fallback_type", reason, to.dtype, rowLen(t.Shape), blockSize(to.dtype))
		default:
			fb = target{dtype: tensor.F16}
			reason = fmt.Sprintf("%s chose %s, but rows of %d are not a whole number of its blocks of %d; fallback_type (default f16)", reason, to.dtype, rowLen(t.Shape), blockSize(to.dtype))
		}
		if fb.keep {
			return fmt.Sprintf("kept %s: %s", t.DType, reason), nil
		}
		if !fits(fb.dtype, t.Shape) {
			return "", &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("%s, and rows of %d do not fit fallback_type %s either", reason, rowLen(t.Shape), fb.dtype), Config: true}
		}
		to = fb
	}
	if to.dtype == t.DType && !codec.IsQTensor(to.dtype) {
		return fmt.Sprintf("kept %s: already %s (%s)", t.DType, to.dtype, reason), nil
	}
	if isIntegerDType(to.dtype) && !q.convertIntegers {
		return "", &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("%s asks for integer type %s; set convert_integers = true to allow float → integer", reason, to.dtype), Config: true}
	}
	op, out, err := ConvertOpScaled(t, to.dtype, to.scaling)
	if err != nil {
		return "", blameConfig(err)
	}
	p.Out.Tensors[i] = out
	p.Mappings[i].Ops = []Op{op}
	note := ""
	if _, whole := op.(*wholeConvert); whole {
		note = fmt.Sprintf("; whole-tensor op, needs %s in memory", bytesize.Human(t.Size+out.Size+4*elementsOf(t)))
	}
	return fmt.Sprintf("%s → %s (%s)%s", t.DType, to, reason, note), nil
}

func elementsOf(t *tensor.TensorInfo) uint64 {
	n, _ := t.Elements()
	return n
}

func (q *quantize) summary(counts map[string]int) string {
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d × %s", counts[k], k))
	}
	what := "type " + q.def.String()
	switch {
	case q.preset != nil:
		what = "preset " + q.preset.name
	case !q.hasDef:
		what = "rules"
	}
	return fmt.Sprintf("%s: %s", what, strings.Join(parts, ", "))
}

// setFileType records the preset as general.file_type, as llama-quantize
// does. From a Hugging Face source the key travels to the GGUF sink, which
// writes it instead of guessing from the most common dtype; sinks that keep
// string metadata only leave it out.
func setFileType(md *tensor.Metadata, p preset) {
	md.Set("general.file_type", tensor.U32Value(p.fileType))
	md.Set("general.quantization_version", tensor.U32Value(2))
}
