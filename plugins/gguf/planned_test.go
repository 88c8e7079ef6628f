package gguf

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// plannedCase is a manifest and a sink to plan it, for the tests of Begin's
// reuse of the plan.
type plannedCase struct {
	name string
	in   *tensor.Manifest
	cfg  SinkConfig
}

func plannedCases(t *testing.T) []plannedCase {
	dir := t.TempDir()
	llama, _ := hfCheckpoint("llama") // drops a tensor, permutes two, converts norms
	qwen, _ := hfCheckpoint("qwen2")
	small, _ := smallManifest(
		TensorSpec{Name: "a", DType: tensor.BF16, Shape: []uint64{8, 64}},
		TensorSpec{Name: "norm", DType: tensor.BF16, Shape: []uint64{64}},
		TensorSpec{Name: "b", DType: tensor.F32, Shape: []uint64{4, 32}},
	)
	small.Tensors[0].SetAttr(tensor.AttrUnit, `{"m":1}`)
	sharded := small.Clone()
	for i := range sharded.Tensors {
		sharded.Tensors[i].SetAttr(tensor.AttrShard, fmt.Sprintf("%d/2", i%2+1))
	}
	return []plannedCase{
		{"llama from Hugging Face", llama, SinkConfig{Path: filepath.Join(dir, "llama.gguf"), Architecture: "auto"}},
		{"qwen2 from Hugging Face, q8_0", qwen, SinkConfig{Path: filepath.Join(dir, "qwen.gguf"), Architecture: "auto", DType: "q8_0"}},
		{"q8_0", small, SinkConfig{Path: filepath.Join(dir, "q8.gguf"), DType: "q8_0"}},
		{"dtypes kept", small, SinkConfig{Path: filepath.Join(dir, "kept.gguf")}},
		{"a split set", sharded, SinkConfig{Path: filepath.Join(dir, "split.gguf"), DType: "f16"}},
	}
}

// planFor plans c and returns the sink and the manifest its Begin gets.
func planFor(t *testing.T, c plannedCase) (*Sink, *tensor.Manifest) {
	t.Helper()
	s, err := NewSink(&c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan(context.Background(), c.in)
	if err != nil {
		t.Fatal(err)
	}
	arrive, _, err := arrival(c.in, plan, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, arrive
}

// TestBeginReusesThePlan checks that Begin, given the manifest its plan
// leads to, takes the plan's files and layouts, and that they are what
// building them again from that manifest gives, byte for byte.
func TestBeginReusesThePlan(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			s, arrive := planFor(t, c)
			got := s.planned.reuse(arrive)
			if got == nil {
				t.Fatal("the plan was not reused for the manifest it leads to")
			}
			want, err := s.build(arrive)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.convert) > 0 || len(got.convert) > 0 {
				t.Fatalf("conversions left after the plan: built %v, reused %v", want.convert, got.convert)
			}
			if len(got.files) != len(want.files) {
				t.Fatalf("%d files reused, %d built", len(got.files), len(want.files))
			}
			for i, g := range got.files {
				w := want.files[i]
				if g.path != w.path || !bytes.Equal(g.layout.Header, w.layout.Header) || g.layout.DataOffset != w.layout.DataOffset ||
					g.layout.FileSize != w.layout.FileSize || !slices.Equal(g.layout.Offsets, w.layout.Offsets) || !slices.Equal(g.layout.Sizes, w.layout.Sizes) ||
					!slices.Equal(g.inNames, w.inNames) || !reflect.DeepEqual(g.specs, w.specs) || !reflect.DeepEqual(g.generated, w.generated) {
					t.Errorf("file %d (%s) reused differs from the one built again", i, g.path)
				}
			}
			if !maps.EqualFunc(got.permutes, want.permutes, func(a, b *permuteSpec) bool { return *a == *b }) {
				t.Errorf("permutations reused %v, built %v", got.permutes, want.permutes)
			}
		})
	}
	t.Run("Begin takes the plan", func(t *testing.T) {
		// The path is the one thing build reads besides the manifest;
		// moved after Plan, it tells a Begin that built again from one
		// that took the plan's files.
		c := plannedCases(t)[2]
		s, arrive := planFor(t, c)
		planned := s.cfg.Path
		s.cfg.Path = filepath.Join(t.TempDir(), "elsewhere.gguf")
		if err := s.Begin(context.Background(), arrive, plugin.BeginOptions{NoFsync: true}); err != nil {
			t.Fatal(err)
		}
		defer s.Abort(context.Background())
		if len(s.files) != 1 || s.files[0].FinalPath() != planned {
			t.Errorf("Begin created %s, not the planned %s", s.files[0].FinalPath(), planned)
		}
	})
}

// TestBeginBuildsAfreshForAnotherManifest checks that any change to what
// the plan saw, in anything build reads, makes Begin build again, and that
// what it then writes follows the manifest it got, not the plan.
func TestBeginBuildsAfreshForAnotherManifest(t *testing.T) {
	var nothing *plannedOutput
	if nothing.reuse(&tensor.Manifest{}) != nil {
		t.Error("reused a plan that was never made")
	}
	cases := plannedCases(t)
	changes := map[string]func(m *tensor.Manifest){
		"a dtype":          func(m *tensor.Manifest) { m.Tensors[0].DType = tensor.F16 },
		"a shape":          func(m *tensor.Manifest) { m.Tensors[0].Shape = []uint64{16, 32} },
		"an attribute":     func(m *tensor.Manifest) { m.Tensors[1].SetAttr("sluice.note", "x") },
		"a name":           func(m *tensor.Manifest) { m.Tensors[2].Name = "c" },
		"the metadata":     func(m *tensor.Manifest) { m.Metadata.Set("general.name", tensor.StringValue("other")) },
		"a tensor less":    func(m *tensor.Manifest) { m.Tensors = m.Tensors[:len(m.Tensors)-1] },
		"a tensor more":    func(m *tensor.Manifest) { m.Tensors = append(m.Tensors, m.Tensors[0].Clone()) },
		"the order":        func(m *tensor.Manifest) { m.Tensors[0], m.Tensors[2] = m.Tensors[2], m.Tensors[0] },
		"a dropped tensor": nil, // below, on the llama checkpoint
	}
	for what, change := range changes {
		if change == nil {
			continue
		}
		t.Run(what, func(t *testing.T) {
			s, arrive := planFor(t, cases[2]) // q8_0: every field in play
			change(arrive)
			if s.planned.reuse(arrive) != nil {
				t.Fatal("the plan was reused for a manifest it does not lead to")
			}
		})
	}
	t.Run("a dropped tensor", func(t *testing.T) {
		s, _ := planFor(t, cases[0])
		if s.planned.reuse(cases[0].in) != nil { // inv_freq still there, norms not f32
			t.Fatal("the plan was reused for the manifest before its drops and conversions")
		}
	})
	t.Run("Begin writes the manifest it gets", func(t *testing.T) {
		s, arrive := planFor(t, cases[3])
		arrive.Tensors[0].Shape = []uint64{16, 64} // twice the rows planned
		arrive.Tensors[0].Size *= 2
		if err := s.Begin(context.Background(), arrive, plugin.BeginOptions{NoFsync: true}); err != nil {
			t.Fatal(err)
		}
		defer s.Abort(context.Background())
		if got, want := s.targets["a"].size, arrive.Tensors[0].Size; got != want {
			t.Errorf("tensor a laid out as %d bytes, %d arrive", got, want)
		}
		if s.planned != nil {
			t.Error("Begin kept the plan")
		}
	})
}
