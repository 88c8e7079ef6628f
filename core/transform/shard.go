package transform

import (
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("shard", Factory{
		Doc: "Assigns tensors to shards, in manifest order, so that no shard exceeds max_size bytes or max_tensors tensors " +
			"(a tensor larger than max_size gets a shard of its own). Sinks that write several files honour the assignment.",
		Spec: hcldec.ObjectSpec{
			"max_size":    &hcldec.AttrSpec{Name: "max_size", Type: cty.String},
			"max_tensors": &hcldec.AttrSpec{Name: "max_tensors", Type: cty.Number},
		},
		New: newShard,
	})
}

type shard struct {
	maxSize    uint64
	maxTensors int
}

func newShard(cfg cty.Value) (Transform, error) {
	s := &shard{}
	if v := cfg.GetAttr("max_size"); !v.IsNull() {
		n, err := bytesize.Parse(v.AsString())
		if err != nil {
			return nil, plugin.ConfigErrorf("max_size", "%v", err)
		}
		if n == 0 {
			return nil, plugin.ConfigErrorf("max_size", "must be more than zero")
		}
		s.maxSize = n
	}
	if v := cfg.GetAttr("max_tensors"); !v.IsNull() {
		bf := v.AsBigFloat()
		n, acc := bf.Int64()
		if acc != 0 || n < 1 {
			return nil, plugin.ConfigErrorf("max_tensors", "must be a whole number of at least 1")
		}
		s.maxTensors = int(n)
	}
	if s.maxSize == 0 && s.maxTensors == 0 {
		return nil, plugin.ConfigErrorf("", "set max_size, max_tensors or both")
	}
	return s, nil
}

func (s *shard) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	shardOf := make([]int, len(p.Out.Tensors))
	cur, size, count := 1, uint64(0), 0
	for i, t := range p.Out.Tensors {
		full := (s.maxSize > 0 && size > 0 && size+t.Size > s.maxSize) || (s.maxTensors > 0 && count >= s.maxTensors)
		if full {
			cur++
			size, count = 0, 0
		}
		shardOf[i] = cur
		size += t.Size
		count++
	}
	for i := range p.Out.Tensors {
		p.Out.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(shardOf[i], cur))
	}
	var sizes = make([]uint64, cur+1)
	for i, t := range p.Out.Tensors {
		sizes[shardOf[i]] += t.Size
	}
	for k := 1; k <= cur; k++ {
		p.Decisions = append(p.Decisions, plugin.Decision{Msg: fmt.Sprintf("shard %d/%d: %s", k, cur, bytesize.Human(sizes[k]))})
	}
	return p, nil
}
