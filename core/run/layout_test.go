package run

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// bigLayout is planLayout in arbitrary precision: the layout it must pick,
// whatever the sizes.
func bigLayout(t *plan.Tree, slot uint64) layout {
	l := layout{align: 1}
	root := t.Root
	if len(root.Children) == 0 && t.Tensor.Location != nil {
		return l
	}
	l.streams = true
	if root.Size == 0 {
		l.chunk = 1
		return l
	}
	bigLCM := func(a, b *big.Int) *big.Int {
		if a.Sign() == 0 || b.Sign() == 0 {
			return new(big.Int).Set(a)
		}
		g := new(big.Int).GCD(nil, nil, a, b)
		return new(big.Int).Mul(new(big.Int).Quo(a, g), b)
	}
	rootSize := new(big.Int).SetUint64(root.Size)
	align := big.NewInt(1)
	maxNum, maxDen := uint64(1), uint64(1)
	whole := false
	var walk func(n *plan.Node)
	walk = func(n *plan.Node) {
		for _, c := range n.Children {
			l.nodes++
			in, _ := c.Op.UnitBytes()
			if in == 0 || n.Size == 0 || in >= n.Size {
				whole = whole || (in != 0 && in >= n.Size && n.Size > slot)
				if in >= n.Size {
					align = bigLCM(align, rootSize)
				}
			} else {
				num := new(big.Int).Mul(new(big.Int).SetUint64(in), rootSize)
				q, m := new(big.Int).QuoRem(num, new(big.Int).SetUint64(n.Size), new(big.Int))
				if m.Sign() != 0 {
					align = bigLCM(align, rootSize)
				} else {
					align = bigLCM(align, q)
				}
			}
			if c.Size*maxDen > maxNum*root.Size {
				maxNum, maxDen = c.Size, root.Size
			}
			walk(c)
		}
	}
	walk(root)
	if !align.IsUint64() || whole {
		return layout{nodes: l.nodes, streams: true}
	}
	l.align = align.Uint64()
	within := func(bound uint64) uint64 {
		limit := new(big.Int).Mul(new(big.Int).SetUint64(bound), new(big.Int).SetUint64(maxDen))
		limit.Quo(limit, new(big.Int).SetUint64(maxNum))
		if !limit.IsUint64() {
			limit.SetUint64(bound)
		}
		return limit.Uint64() / l.align * l.align
	}
	chunk := within(slot)
	if l.nodes > 0 {
		if target := within(min(slot, chunkTarget)); target > 0 {
			chunk = target
		} else if chunk > l.align {
			chunk = l.align
		}
	}
	if chunk == 0 {
		return layout{nodes: l.nodes, streams: true}
	}
	l.chunk = chunk
	return l
}

// planLayout computes in 64 bits what exact arithmetic gives, on trees of
// random sizes and units, small (units that divide, units that do not) and
// near 2^64 (products and multiples that overflow).
func TestPlanLayoutIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	size := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return uint64(rng.IntN(64)) // tiny, 0 included
		case 1:
			return uint64(1+rng.IntN(1<<12)) * 512
		case 2:
			return rng.Uint64N(1 << 40)
		default:
			return rng.Uint64() // overflows any product
		}
	}
	for i := range 200000 {
		rootSize := size()
		tr := &plan.Tree{Tensor: tensor.TensorInfo{Name: "w", Size: rootSize}, Root: &plan.Node{Size: rootSize}}
		parents := []*plan.Node{tr.Root}
		for range 1 + rng.IntN(4) {
			p := parents[rng.IntN(len(parents))]
			c := &plan.Node{Op: unitOp{size()}, Size: size()}
			p.Children = append(p.Children, c)
			parents = append(parents, c)
		}
		slot := []uint64{1 << 20, 8 << 20, 1 << 40}[rng.IntN(3)]
		if got, want := planLayout(tr, slot), bigLayout(tr, slot); got != want {
			t.Fatalf("tree %d (root %d bytes, slot %d): layout %+v, exact arithmetic gives %+v", i, rootSize, slot, got, want)
		}
	}
}
