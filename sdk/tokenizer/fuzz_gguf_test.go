package tokenizer

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ggufSeed is one FuzzFromGGUF input: the model name, the tokens joined by
// NUL, the merges joined by newlines, the token types (one byte each), the
// score bits (four bytes each), the pre-tokenizer name and the BOS/EOS/UNK
// ids.
type ggufSeed struct {
	model, tokens, merges string
	types, scores         []byte
	pre                   string
	bos, eos, unk         int32
}

var ggufSeeds = map[string]ggufSeed{
	"gpt2": {"gpt2", "a\x00b\x00ab\x00Ġ\x00<|end|>", "a b", []byte{1, 1, 1, 1, 3}, nil, "default", 4, 4, -1},
	"llama": {"llama", "<unk>\x00<s>\x00</s>\x00▁\x00a\x00▁a\x00<0x41>", "", []byte{2, 3, 3, 1, 1, 1, 6},
		[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 191, 0, 0, 0, 192, 0, 0, 64, 192, 0, 0, 0, 0}, "", 1, 2, 0},
	"duplicate": {"gpt2", "a\x00a", "", nil, nil, "", -1, -1, -1},
	"badmerge":  {"gpt2", "a\x00b", "a b c\nzz yy\n", nil, nil, "qwen2", 7, 0x7fffffff, -2},
	"shorttype": {"llama", "a\x00b\x00c", "", []byte{1}, []byte{0, 0}, "", 0, 0, 0},
	"unknown":   {"bert", "a", "", nil, nil, "", 0, 0, 0},
}

func (s ggufSeed) values() []any {
	return []any{s.model, s.tokens, s.merges, s.types, s.scores, s.pre, s.bos, s.eos, s.unk}
}

// ggufMetadata builds tokenizer.ggml.* metadata from fuzz inputs.
func ggufMetadata(model, tokens, merges string, types, scores []byte, pre string, bos, eos, unk int32) *tensor.Metadata {
	md := &tensor.Metadata{}
	md.Set(KeyModel, tensor.StringValue(model))
	toks := strings.Split(tokens, "\x00")
	md.Set(KeyTokens, tensor.StringArray(toks))
	if merges != "" {
		md.Set(KeyMerges, tensor.StringArray(strings.Split(merges, "\n")))
	}
	if types != nil {
		tt := make([]int32, len(types))
		for i, b := range types {
			tt[i] = int32(b%8) - 1
		}
		md.Set(KeyTokenType, tensor.Int32Array(tt))
	}
	if scores != nil {
		raw := make([]byte, len(scores)/4*4)
		copy(raw, scores)
		if v, err := tensor.ArrayValue(tensor.TypeF32, raw); err == nil {
			md.Set(KeyScores, v)
		}
	}
	if pre != "" {
		md.Set(KeyPre, tensor.StringValue(pre))
	}
	for key, id := range map[string]int32{KeyBOSID: bos, KeyEOSID: eos, KeyUnknownID: unk} {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(id))
		md.Set(key, tensor.U32Value(binary.LittleEndian.Uint32(b[:])))
	}
	return md
}

// FuzzFromGGUF builds tokenizers from arbitrary tokenizer.ggml.* metadata, as
// a GGUF file gives it: whatever FromGGUF accepts must encode and decode
// without panicking and give ids inside the vocabulary.
func FuzzFromGGUF(f *testing.F) {
	for _, s := range ggufSeeds {
		f.Add(s.model, s.tokens, s.merges, s.types, s.scores, s.pre, s.bos, s.eos, s.unk)
	}
	f.Fuzz(func(t *testing.T, model, tokens, merges string, types, scores []byte, pre string, bos, eos, unk int32) {
		tok, err := FromGGUF(ggufMetadata(model, tokens, merges, types, scores, pre, bos, eos, unk))
		if err != nil {
			return
		}
		exercise(t, tok, fuzzTexts...)
		exercise(t, tok, tokens)
	})
}

func TestFuzzFromGGUFSeeds(t *testing.T) {
	var list []fuzzseed.Seed
	for name, s := range ggufSeeds {
		list = append(list, fuzzseed.Seed{Name: name, Values: s.values()})
	}
	fuzzseed.Sync(t, "FuzzFromGGUF", list)
}
