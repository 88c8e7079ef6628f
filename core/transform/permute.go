package transform

import (
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/layout"
	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("permute", Factory{
		Doc: "Applies llama's query/key rotary permutation as llama.cpp's converter does (Hugging Face's " +
			"rotate-half row order → ggml's interleaved order), or its inverse with inverse = true. Head counts " +
			"come from n_head/n_head_kv or from the checkpoint's config.json or GGUF metadata. Streams one head " +
			"at a time.",
		Spec: hcldec.ObjectSpec{
			"inverse":   &hcldec.AttrSpec{Name: "inverse", Type: cty.Bool},
			"n_head":    &hcldec.AttrSpec{Name: "n_head", Type: cty.Number},
			"n_head_kv": &hcldec.AttrSpec{Name: "n_head_kv", Type: cty.Number},
			"query":     &hcldec.AttrSpec{Name: "query", Type: cty.List(cty.String)},
			"key":       &hcldec.AttrSpec{Name: "key", Type: cty.List(cty.String)},
		},
		New: newPermute,
	})
}

// Default patterns of the query and key projections, in both name styles.
var (
	defaultQuery = []string{"*.self_attn.q_proj.weight", "*.self_attn.q_proj.bias", "blk.*.attn_q.weight", "blk.*.attn_q.bias"}
	defaultKey   = []string{"*.self_attn.k_proj.weight", "*.self_attn.k_proj.bias", "blk.*.attn_k.weight", "blk.*.attn_k.bias"}
)

type permute struct {
	inverse       bool
	nHead, nKV    int // 0: from the metadata
	query, keyRel globs
}

func newPermute(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	p := &permute{inverse: a.boolean("inverse")}
	if n, ok, err := a.integer("n_head", 1, 1<<20); err != nil {
		return nil, err
	} else if ok {
		p.nHead = int(n)
	}
	if n, ok, err := a.integer("n_head_kv", 1, 1<<20); err != nil {
		return nil, err
	} else if ok {
		p.nKV = int(n)
	}
	q, k := a.strings("query"), a.strings("key")
	if q == nil {
		q = defaultQuery
	}
	if k == nil {
		k = defaultKey
	}
	var err error
	if p.query, err = compileGlobs("query", q); err != nil {
		return nil, err
	}
	if p.keyRel, err = compileGlobs("key", k); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *permute) Plan(in *tensor.Manifest) (*Plan, error) {
	pl := Identity(in)
	model := readModelInfo(&in.Metadata)
	dir := "Hugging Face rotate-half order → llama.cpp's interleaved order"
	if p.inverse {
		dir = "llama.cpp's interleaved order → Hugging Face rotate-half order"
	}
	n := 0
	for i := range in.Tensors {
		t := &in.Tensors[i]
		isQ, isK := p.query.match(t.Name), p.keyRel.match(t.Name)
		if !isQ && !isK {
			continue
		}
		layer, ok := llamanames.LayerIndex(t.Name)
		if !ok {
			layer = -1
		}
		heads, src, err := p.heads(isK, &model, layer)
		if err != nil {
			return nil, &TensorError{Tensor: t.Name, Msg: err.Error(), Config: true}
		}
		op, err := newPermuteOp(t, heads, p.inverse)
		if err != nil {
			return nil, err
		}
		out := t.Clone()
		out.Location = nil
		pl.Out.Tensors[i] = out
		pl.Mappings[i].Ops = []Op{op}
		what := "query"
		if isK {
			what = "key"
		}
		pl.Decisions = append(pl.Decisions, plugin.Decision{Tensor: t.Name,
			Msg: fmt.Sprintf("%s rows permuted: %d heads of %d rows (%s)", what, heads, op.headRows, src)})
		n++
	}
	pl.Decisions = append([]plugin.Decision{{Msg: fmt.Sprintf("%d tensors permuted, %s", n, dir)}}, pl.Decisions...)
	return pl, nil
}

// heads returns the head count for a query (n_head) or key (n_head_kv)
// tensor, and where it came from.
func (p *permute) heads(isKey bool, m *modelInfo, layer int) (int, string, error) {
	if isKey {
		switch {
		case p.nKV > 0:
			return p.nKV, "n_head_kv", nil
		case p.nHead > 0 && len(m.nHeadKV) == 0:
			return p.nHead, "n_head (no n_head_kv given)", nil
		}
		if h := headsAt(m.nHeadKV, layer); h > 0 {
			return h, "key/value heads from " + m.from, nil
		}
	} else {
		if p.nHead > 0 {
			return p.nHead, "n_head", nil
		}
		if h := headsAt(m.nHead, layer); h > 0 {
			return h, "heads from " + m.from, nil
		}
	}
	return 0, "", fmt.Errorf("the head count is unknown: set n_head and n_head_kv, or read a checkpoint whose config.json (num_attention_heads, num_key_value_heads) or GGUF metadata (<arch>.attention.head_count, head_count_kv) has it")
}

// permuteOp rearranges the rows of each head; a unit is one head.
type permuteOp struct {
	name     string
	inverse  bool
	heads    int
	headRows int
	rowBytes int
}

func newPermuteOp(t *tensor.TensorInfo, heads int, inverse bool) (*permuteOp, error) {
	if len(t.Shape) == 0 || len(t.Shape) > 2 {
		return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("has shape %v; the rotary permutation applies to [rows, cols] weights and [rows] biases", t.Shape), Config: true}
	}
	if codec.IsQTensor(t.DType) {
		return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("is a %s QTensor, whose scales would have to move with its rows; dequantize it first", t.DType), Config: true}
	}
	rows := t.Shape[0]
	rowBytes, err := t.DType.ShapeByteSize(t.Shape[1:])
	if err != nil {
		return nil, &TensorError{Tensor: t.Name, Msg: err.Error(), Input: true}
	}
	if heads <= 0 || rows%uint64(heads) != 0 {
		return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("%d rows do not split into %d heads", rows, heads), Config: true}
	}
	hd := rows / uint64(heads)
	if hd%2 != 0 {
		return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("heads of %d rows cannot be permuted: the rotary halves need an even head size", hd), Config: true}
	}
	if rowBytes == 0 || rowBytes > 1<<40 || hd > 1<<30 {
		return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("rows of %d bytes cannot be permuted", rowBytes), Config: true}
	}
	return &permuteOp{name: t.Name, inverse: inverse, heads: heads, headRows: int(hd), rowBytes: int(rowBytes)}, nil
}

func (o *permuteOp) String() string {
	if o.inverse {
		return fmt.Sprintf("unpermute Q/K rows (%d heads)", o.heads)
	}
	return fmt.Sprintf("permute Q/K rows (%d heads)", o.heads)
}

func (o *permuteOp) UnitBytes() (uint64, uint64) {
	u := uint64(o.headRows) * uint64(o.rowBytes)
	return u, u
}

func (o *permuteOp) Apply(dst, src []byte) error {
	step := o.headRows * o.rowBytes
	if len(src)%step != 0 || len(dst) != len(src) {
		return fmt.Errorf("permute: %d bytes are not whole heads of %d", len(src), step)
	}
	for off := 0; off < len(src); off += step {
		var err error
		if o.inverse {
			err = layout.UnpermuteHead(dst[off:off+step], src[off:off+step], o.rowBytes)
		} else {
			err = layout.PermuteHead(dst[off:off+step], src[off:off+step], o.rowBytes)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
