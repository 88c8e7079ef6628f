package transform

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	criteria := hcldec.ObjectSpec{
		"match":    &hcldec.AttrSpec{Name: "match", Type: cty.List(cty.String)},
		"dtype":    &hcldec.AttrSpec{Name: "dtype", Type: cty.List(cty.String)},
		"min_dims": &hcldec.AttrSpec{Name: "min_dims", Type: cty.Number},
		"max_dims": &hcldec.AttrSpec{Name: "max_dims", Type: cty.Number},
	}
	Register("filter", Factory{
		Doc: "Keeps or drops tensors. A tensor passes when it matches some include block (or there is none) and " +
			"no exclude block. Within a block every given criterion must hold: match (name globs), dtype " +
			"(a list of dtypes), min_dims and max_dims.",
		Spec: hcldec.ObjectSpec{
			"include": &hcldec.BlockListSpec{TypeName: "include", Nested: criteria},
			"exclude": &hcldec.BlockListSpec{TypeName: "exclude", Nested: criteria},
		},
		New: newFilter,
	})
}

// predicate is one include or exclude block.
type predicate struct {
	label            string
	match            globs
	dtypes           map[tensor.DType]bool
	minDims, maxDims int
}

func (pr *predicate) holds(t *tensor.TensorInfo) bool {
	if !pr.match.matchOrAll(t.Name) {
		return false
	}
	if pr.dtypes != nil && !pr.dtypes[t.DType] {
		return false
	}
	d := len(t.Shape)
	return d >= pr.minDims && (pr.maxDims < 0 || d <= pr.maxDims)
}

func parsePredicates(a attrs, kind string) ([]*predicate, error) {
	var out []*predicate
	for i, b := range a.blocks(kind) {
		pr := &predicate{label: fmt.Sprintf("%s block %d", kind, i+1), maxDims: -1}
		var err error
		if pr.match, err = compileGlobs("match", b.strings("match")); err != nil {
			return nil, err
		}
		if names := b.strings("dtype"); b.has("dtype") {
			pr.dtypes = map[tensor.DType]bool{}
			for _, n := range names {
				dt, err := tensor.ParseDType(n)
				if err != nil {
					return nil, configErr(b, "dtype", "%v", err)
				}
				pr.dtypes[dt] = true
			}
		}
		if n, ok, err := b.integer("min_dims", 0, 64); err != nil {
			return nil, err
		} else if ok {
			pr.minDims = int(n)
		}
		if n, ok, err := b.integer("max_dims", 0, 64); err != nil {
			return nil, err
		} else if ok {
			pr.maxDims = int(n)
		}
		out = append(out, pr)
	}
	return out, nil
}

type filter struct {
	include, exclude []*predicate
}

func newFilter(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	f := &filter{}
	var err error
	if f.include, err = parsePredicates(a, "include"); err != nil {
		return nil, err
	}
	if f.exclude, err = parsePredicates(a, "exclude"); err != nil {
		return nil, err
	}
	if len(f.include) == 0 && len(f.exclude) == 0 {
		return nil, plugin.ConfigErrorf("", "give include or exclude blocks")
	}
	return f, nil
}

// verdict says whether a tensor passes and why not.
func (f *filter) verdict(t *tensor.TensorInfo) (bool, string) {
	if len(f.include) > 0 {
		in := false
		for _, pr := range f.include {
			if pr.holds(t) {
				in = true
				break
			}
		}
		if !in {
			return false, "matches no include block"
		}
	}
	for _, pr := range f.exclude {
		if pr.holds(t) {
			return false, "matches " + pr.label
		}
	}
	return true, ""
}

func (f *filter) Plan(in *tensor.Manifest) (*Plan, error) {
	p := &Plan{Out: &tensor.Manifest{Metadata: in.Metadata.Clone()}}
	var dropped []string
	for i := range in.Tensors {
		t := &in.Tensors[i]
		ok, why := f.verdict(t)
		if !ok {
			dropped = append(dropped, t.Name)
			p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: "dropped: " + why})
			continue
		}
		p.Out.Tensors = append(p.Out.Tensors, t.Clone())
		p.Mappings = append(p.Mappings, Mapping{From: t.Name})
	}
	if len(p.Out.Tensors) == 0 && len(in.Tensors) > 0 {
		return nil, plugin.ConfigErrorf("", "the filter drops all %d tensors; check the include and exclude blocks", len(in.Tensors))
	}
	// A tensor tied to a dropped one keeps its bytes but loses the tie.
	gone := map[string]bool{}
	for _, n := range dropped {
		gone[n] = true
	}
	for i := range p.Out.Tensors {
		t := &p.Out.Tensors[i]
		if gone[t.Attr(tensor.AttrTiedTo)] {
			delete(t.Attrs, tensor.AttrTiedTo)
		}
	}
	summary := fmt.Sprintf("%d tensors kept, %d dropped", len(p.Out.Tensors), len(dropped))
	if len(dropped) > 0 {
		summary += ": " + abbreviate(dropped, 6)
	}
	p.Decisions = append([]plugin.Decision{{Msg: strings.TrimSpace(summary)}}, p.Decisions...)
	return p, nil
}
