package gguf

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func BenchmarkVocabulary150k(b *testing.B) {
	data := vocabFile(150000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDescribeVocabulary150k(b *testing.B) {
	path := vocabModel(b, 150000)
	b.ReportAllocs()
	for b.Loop() {
		describeOnce(b, path)
	}
}

// manyTensors is a mixture-of-experts checkpoint's count of bf16 tensors,
// 20,000 of 64 × 128.
func manyTensors() *tensor.Manifest {
	m := &tensor.Manifest{Tensors: make([]tensor.TensorInfo, 20000)}
	for i := range m.Tensors {
		m.Tensors[i] = tensor.TensorInfo{Name: fmt.Sprintf("model.layers.%d.mlp.experts.%d.down_proj.weight", i/64, i%64),
			DType: tensor.BF16, Shape: []uint64{64, 128}, Size: 16384}
	}
	return m
}

// BenchmarkPlanManyTensors plans a GGUF file of q8_0 from 20,000 bf16
// tensors: the sink's work before a run's first byte moves, at Plan.
func BenchmarkPlanManyTensors(b *testing.B) {
	m := manyTensors()
	s, err := NewSink(&SinkConfig{Path: filepath.Join(b.TempDir(), "out.gguf"), DType: "q8_0"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.Plan(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Convert) != len(m.Tensors) {
			b.Fatalf("%d conversions planned, want %d", len(p.Convert), len(m.Tensors))
		}
	}
}

// BenchmarkBeginManyTensors is the sink's Begin after the Plan of
// BenchmarkPlanManyTensors, given the manifest that plan leads to: the
// file created, its header written, its tensors' places listed.
func BenchmarkBeginManyTensors(b *testing.B) {
	m := manyTensors()
	dir := b.TempDir()
	cfg := SinkConfig{Path: filepath.Join(dir, "out.gguf"), DType: "q8_0"}
	s, err := NewSink(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		b.Fatal(err)
	}
	arrive, _, err := arrival(m, p, true)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s, _ := NewSink(&cfg)
		if _, err := s.Plan(context.Background(), m); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.Begin(context.Background(), arrive, plugin.BeginOptions{NoFsync: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Abort(context.Background())
		b.StartTimer()
	}
}
