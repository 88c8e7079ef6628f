package gguf

import (
	"maps"
	"slices"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// plannedOutput is what a Plan decided, kept for the Begin that follows: a
// model of tens of thousands of tensors costs milliseconds to lay out, and
// in a plugin process, whose heap is new, more.
type plannedOutput struct {
	in  *tensor.Manifest
	out *output
}

// reuse returns the planned output for Begin's manifest m when m is the
// planned input as the plan converts it: the same metadata, and the same
// tensors in the same order, less those the plan drops, each with the same
// name, shape and attributes and in the dtype the plan asked for. Those
// are all build reads, so it would decide the same files and layouts. It
// returns nil, for Begin to build afresh, for any other manifest, and when
// nothing was planned.
func (p *plannedOutput) reuse(m *tensor.Manifest) *output {
	if p == nil || !p.in.Metadata.Equal(&m.Metadata) {
		return nil
	}
	var dropped map[string]bool
	if len(p.out.drops) > 0 {
		dropped = make(map[string]bool, len(p.out.drops))
		for _, d := range p.out.drops {
			dropped[d.Tensor] = true
		}
	}
	convert := p.out.convert // in the manifest's order, a tensor at most once
	k := 0
	for i := range p.in.Tensors {
		t := &p.in.Tensors[i]
		if dropped[t.Name] {
			continue
		}
		if k == len(m.Tensors) {
			return nil
		}
		u := &m.Tensors[k]
		k++
		want := t.DType
		if len(convert) > 0 && convert[0].Tensor == t.Name {
			want, convert = convert[0].To, convert[1:]
		}
		if u.Name != t.Name || u.DType != want || !slices.Equal(u.Shape, t.Shape) || !maps.Equal(u.Attrs, t.Attrs) {
			return nil
		}
	}
	if k != len(m.Tensors) || len(convert) > 0 {
		return nil
	}
	// Begin reads the files and the permutations; what arrives needs no
	// conversion, and the notes and drops were the plan's to report.
	return &output{files: p.out.files, permutes: p.out.permutes}
}
