package chattemplate

import (
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// GGUF metadata keys of chat templates.
const (
	keyChatTemplate  = "tokenizer.chat_template"
	keyChatTemplates = "tokenizer.chat_templates"
	keyTokens        = "tokenizer.ggml.tokens"
	keyBOS           = "tokenizer.ggml.bos_token_id"
	keyEOS           = "tokenizer.ggml.eos_token_id"
)

// FromGGUF reads the chat templates of a GGUF file's metadata:
// tokenizer.chat_template (the default) and tokenizer.chat_template.<name>
// for each name tokenizer.chat_templates lists (or, without that list, each
// such key). The special tokens are the texts of tokenizer.ggml.bos_token_id
// and eos_token_id.
func FromGGUF(md *tensor.Metadata) (*Set, error) {
	s := &Set{}
	if v, ok := md.Get(keyChatTemplate); ok {
		if src, ok := v.Str(); ok {
			s.add("", src)
		}
	}
	if v, ok := md.Get(keyChatTemplates); ok {
		names, _ := v.StringSlice()
		for _, name := range names {
			if v, ok := md.Get(keyChatTemplate + "." + name); ok {
				if src, ok := v.Str(); ok {
					s.add(name, src)
				}
			}
		}
	} else {
		for _, k := range md.Keys() {
			name, ok := strings.CutPrefix(k, keyChatTemplate+".")
			if !ok || name == "" {
				continue
			}
			v, _ := md.Get(k)
			if src, ok := v.Str(); ok {
				s.add(name, src)
			}
		}
	}
	if v, ok := md.Get(keyTokens); ok {
		tokens, _ := v.StringSlice()
		text := func(key string) string {
			v, ok := md.Get(key)
			if !ok {
				return ""
			}
			id, ok := v.Uint()
			if !ok || id >= uint64(len(tokens)) {
				return ""
			}
			return tokens[id]
		}
		s.BOSToken, s.EOSToken = text(keyBOS), text(keyEOS)
	}
	return s, nil
}
