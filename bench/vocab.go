package main

import (
	"fmt"
	"os"

	"github.com/sluice-ml/sluice/plugins/gguf"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// writeVocabGGUF writes a GGUF whose header carries a vocabulary of n
// byte-level tokens with scores, token types and n merges (like a Qwen or
// Llama 3 model) and 33 small llama blocks: the file the peers were timed
// on in spec/peers.md (19 keys, 300 tensors).
func writeVocabGGUF(path string, n int) error {
	var md tensor.Metadata
	md.Set("general.architecture", tensor.StringValue("llama"))
	md.Set("general.name", tensor.StringValue("vocab150k"))
	md.Set("llama.block_count", tensor.U32Value(33))
	md.Set("llama.context_length", tensor.U32Value(4096))
	md.Set("llama.embedding_length", tensor.U32Value(64))
	md.Set("llama.feed_forward_length", tensor.U32Value(128))
	md.Set("llama.attention.head_count", tensor.U32Value(4))
	md.Set("llama.attention.head_count_kv", tensor.U32Value(4))
	md.Set("llama.rope.freq_base", tensor.F32Value(10000))
	md.Set("llama.attention.layer_norm_rms_epsilon", tensor.F32Value(1e-5))
	md.Set("general.file_type", tensor.U32Value(1))
	tokens := make([]string, n)
	merges := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("Ġt%dé", i)
		merges[i] = fmt.Sprintf("Ġt %dé", i)
		scores[i] = -float32(i)
		types[i] = 1
	}
	md.Set("tokenizer.ggml.model", tensor.StringValue("gpt2"))
	md.Set("tokenizer.ggml.pre", tensor.StringValue("qwen2"))
	md.Set("tokenizer.ggml.tokens", tensor.StringArray(tokens))
	md.Set("tokenizer.ggml.scores", tensor.Float32Array(scores))
	md.Set("tokenizer.ggml.token_type", tensor.Int32Array(types))
	md.Set("tokenizer.ggml.merges", tensor.StringArray(merges))
	md.Set("tokenizer.ggml.bos_token_id", tensor.U32Value(1))
	md.Set("tokenizer.ggml.eos_token_id", tensor.U32Value(2))

	var specs []gguf.TensorSpec
	add := func(name string, dt tensor.DType, shape ...uint64) {
		specs = append(specs, gguf.TensorSpec{Name: name, DType: dt, Shape: shape})
	}
	add("token_embd.weight", tensor.F16, 32, 64)
	for b := 0; b < 33; b++ {
		p := fmt.Sprintf("blk.%d.", b)
		add(p+"attn_norm.weight", tensor.F32, 64)
		add(p+"attn_q.weight", tensor.F16, 32, 64)
		add(p+"attn_k.weight", tensor.F16, 32, 64)
		add(p+"attn_v.weight", tensor.F16, 32, 64)
		add(p+"attn_output.weight", tensor.F16, 32, 64)
		add(p+"ffn_norm.weight", tensor.F32, 64)
		add(p+"ffn_gate.weight", tensor.F16, 32, 64)
		add(p+"ffn_up.weight", tensor.F16, 32, 64)
		add(p+"ffn_down.weight", tensor.F16, 32, 64)
	}
	add("output_norm.weight", tensor.F32, 64)
	add("output.weight", tensor.F16, 32, 64)
	l, err := gguf.PlanFile(&md, specs, gguf.DefaultAlignment)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(l.Header); err != nil {
		f.Close()
		return err
	}
	// The data section is zeros: small tensors, and the point is the header.
	if err := f.Truncate(int64(l.FileSize)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
