package transform

import (
	"encoding/json"
	"fmt"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// modelInfo holds the hyperparameters some transforms need, read from a
// manifest's metadata: llama.cpp's GGUF keys, or a Hugging Face config.json
// carried under tensor.MetaHFConfig.
type modelInfo struct {
	// from says where the values came from, for plans and errors.
	from string
	// arch is llama.cpp's architecture name ("llama", "qwen2", "falcon"); a
	// Hugging Face model_type is mapped to it where llama.cpp does.
	arch   string
	nLayer int
	// nHead and nHeadKV hold one value per layer when the checkpoint says so
	// per layer, else a single value; nil when unknown.
	nHead, nHeadKV []int
	nExpert        int
}

// headsAt returns the value for a layer of a per-layer list.
func headsAt(v []int, layer int) int {
	switch {
	case len(v) == 0:
		return 0
	case len(v) == 1 || layer < 0:
		return v[0]
	case layer < len(v):
		return v[layer]
	}
	return 0
}

// gqa returns llama.cpp's n_gqa(): heads per key/value head, at layer 0.
func (m *modelInfo) gqa() int {
	h, kv := headsAt(m.nHead, 0), headsAt(m.nHeadKV, 0)
	if kv == 0 {
		return 0
	}
	return h / kv
}

// hfArch maps Hugging Face model types to llama.cpp architectures where they
// differ.
var hfArch = map[string]string{
	"mistral": "llama",
	"mixtral": "llama",
}

func readModelInfo(md *tensor.Metadata) modelInfo {
	var m modelInfo
	if arch := md.String("general.architecture"); arch != "" {
		m.from = "GGUF metadata"
		m.arch = arch
		m.nLayer = metaInt(md, arch+".block_count")
		m.nHead = metaInts(md, arch+".attention.head_count")
		m.nHeadKV = metaInts(md, arch+".attention.head_count_kv")
		m.nExpert = metaInt(md, arch+".expert_count")
		if m.nHeadKV == nil {
			m.nHeadKV = m.nHead
		}
		return m
	}
	raw := md.String(tensor.MetaHFConfig)
	if raw == "" {
		return m
	}
	var cfg struct {
		ModelType         string `json:"model_type"`
		NumHiddenLayers   *int   `json:"num_hidden_layers"`
		NumAttentionHeads *int   `json:"num_attention_heads"`
		NumKeyValueHeads  *int   `json:"num_key_value_heads"`
		NumLocalExperts   *int   `json:"num_local_experts"`
		NumExperts        *int   `json:"num_experts"`
		TextConfig        *struct {
			ModelType         string `json:"model_type"`
			NumHiddenLayers   *int   `json:"num_hidden_layers"`
			NumAttentionHeads *int   `json:"num_attention_heads"`
			NumKeyValueHeads  *int   `json:"num_key_value_heads"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return m
	}
	m.from = "config.json"
	if tc := cfg.TextConfig; tc != nil && cfg.NumHiddenLayers == nil {
		cfg.ModelType, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads = tc.ModelType, tc.NumHiddenLayers, tc.NumAttentionHeads, tc.NumKeyValueHeads
	}
	m.arch = cfg.ModelType
	if a, ok := hfArch[m.arch]; ok {
		m.arch = a
	}
	if cfg.NumHiddenLayers != nil {
		m.nLayer = *cfg.NumHiddenLayers
	}
	if cfg.NumAttentionHeads != nil {
		m.nHead = []int{*cfg.NumAttentionHeads}
		m.nHeadKV = m.nHead
	}
	if cfg.NumKeyValueHeads != nil {
		m.nHeadKV = []int{*cfg.NumKeyValueHeads}
	}
	switch {
	case cfg.NumLocalExperts != nil:
		m.nExpert = *cfg.NumLocalExperts
	case cfg.NumExperts != nil:
		m.nExpert = *cfg.NumExperts
	}
	return m
}

// metaInt reads an unsigned or signed integer key; 0 when absent.
func metaInt(md *tensor.Metadata, key string) int {
	v, ok := md.Get(key)
	if !ok {
		return 0
	}
	if u, ok := v.Uint(); ok && u < 1<<31 {
		return int(u)
	}
	if i, ok := v.Int(); ok && i >= 0 && i < 1<<31 {
		return int(i)
	}
	return 0
}

// metaInts reads an integer key that may be an array with one value per
// layer.
func metaInts(md *tensor.Metadata, key string) []int {
	v, ok := md.Get(key)
	if !ok {
		return nil
	}
	if v.Type() != tensor.TypeArray {
		if n := metaInt(md, key); n > 0 {
			return []int{n}
		}
		return nil
	}
	out := make([]int, v.Len())
	for i := range out {
		e := v.Index(i)
		if u, ok := e.Uint(); ok && u < 1<<31 {
			out[i] = int(u)
		} else if n, ok := e.Int(); ok && n >= 0 && n < 1<<31 {
			out[i] = int(n)
		}
	}
	return out
}

func (m *modelInfo) describe() string {
	if m.from == "" {
		return "no hyperparameters in the metadata"
	}
	return fmt.Sprintf("%s: arch %q, %d layers, %v heads, %v key/value heads, %d experts", m.from, m.arch, m.nLayer, m.nHead, m.nHeadKV, m.nExpert)
}
