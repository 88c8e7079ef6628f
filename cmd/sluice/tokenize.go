package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/sdk/chattemplate"
	"github.com/sluice-ml/sluice/sdk/tensor"
	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

// tokenizeSchema names the version of tokenize's --json output.
const tokenizeSchema = "sluice.tokenize/v1"

// maxTokenizerFile caps the size of a tokenizer file read from disk.
const maxTokenizerFile = 256 << 20

// vocabSource is what a checkpoint says about its tokenizer and chat
// template: Hugging Face files, or GGUF-style metadata.
type vocabSource struct {
	// From names where it came from, for people: "tokenizer.json", "GGUF
	// metadata".
	From string
	// TokenizerJSON and TokenizerConfig are the Hugging Face files (config
	// may be nil).
	TokenizerJSON, TokenizerConfig []byte
	// Metadata holds tokenizer.ggml.* and tokenizer.chat_template keys.
	Metadata *tensor.Metadata
}

// loadVocab finds the tokenizer of a checkpoint, reading as little as it
// can: a directory or file holding tokenizer.json is read directly (no
// weights needed); any other checkpoint is described (headers only) and its
// metadata searched for carried Hugging Face files or GGUF tokenizer keys.
func loadVocab(ctx context.Context, h *host.Host, arg string) (*vocabSource, error) {
	fi, err := os.Stat(arg)
	if err != nil {
		path, _ := resolveInput(arg)
		if fi, err = os.Stat(path); err != nil {
			return nil, &inputError{path: arg, err: err}
		}
	}
	dir := ""
	switch {
	case fi.IsDir():
		dir = arg
	case filepath.Base(arg) == "tokenizer.json" || filepath.Base(arg) == "tokenizer_config.json":
		dir = filepath.Dir(arg)
	}
	if dir != "" {
		if tok, err := readLimited(filepath.Join(dir, "tokenizer.json")); err == nil {
			cfg, err := readLimited(filepath.Join(dir, "tokenizer_config.json"))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, &inputError{path: filepath.Join(dir, "tokenizer_config.json"), err: err}
			}
			return &vocabSource{From: filepath.Join(dir, "tokenizer.json"), TokenizerJSON: tok, TokenizerConfig: cfg}, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, &inputError{path: filepath.Join(dir, "tokenizer.json"), err: err}
		}
	}
	c, err := openCheckpoint(ctx, h, arg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	md := &c.Manifest.Metadata
	if v, ok := md.Get(tensor.MetaHFTokenizer); ok {
		tok, _ := v.Str()
		vs := &vocabSource{From: c.Format + " metadata " + tensor.MetaHFTokenizer, TokenizerJSON: []byte(tok)}
		if v, ok := md.Get(tensor.MetaHFTokenizerConfig); ok {
			s, _ := v.Str()
			vs.TokenizerConfig = []byte(s)
		}
		return vs, nil
	}
	if _, ok := md.Get(tokenizer.KeyModel); ok {
		clone := md.Clone()
		return &vocabSource{From: c.Format + " metadata (tokenizer.ggml.*)", Metadata: &clone}, nil
	}
	if _, ok := md.Get(aprVocabulary); ok {
		return &vocabSource{From: c.Format + " metadata (tokenizer.vocabulary …)", Metadata: ggufKeysFromAPR(md)}, nil
	}
	if _, ok := md.Get(tokenizer.KeyChatTemplate); ok {
		clone := md.Clone()
		return &vocabSource{From: c.Format + " metadata", Metadata: &clone}, nil
	}
	return nil, &inputError{path: arg, err: fmt.Errorf("the %s checkpoint carries no tokenizer (neither Hugging Face tokenizer files nor GGUF tokenizer.ggml.* keys)", c.Format),
		hint: "point at the Hugging Face directory that holds tokenizer.json, or at a GGUF file"}
}

func readLimited(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenizerFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTokenizerFile {
		return nil, fmt.Errorf("larger than %d bytes", maxTokenizerFile)
	}
	return b, nil
}

// Tokenizer builds the tokenizer.
func (v *vocabSource) Tokenizer() (*tokenizer.Tokenizer, error) {
	var t *tokenizer.Tokenizer
	var err error
	switch {
	case v.TokenizerJSON != nil:
		t, err = tokenizer.FromHuggingFace(v.TokenizerJSON, v.TokenizerConfig)
	case v.Metadata != nil:
		if _, ok := v.Metadata.Get(tokenizer.KeyModel); !ok {
			return nil, &inputError{path: v.From, err: errors.New("no tokenizer.ggml.model key: the checkpoint has a chat template but no vocabulary")}
		}
		t, err = tokenizer.FromGGUF(v.Metadata)
	}
	if err != nil {
		return nil, &inputError{path: v.From, err: err}
	}
	return t, nil
}

// Templates reads the chat templates.
func (v *vocabSource) Templates() (*chattemplate.Set, error) {
	var s *chattemplate.Set
	var err error
	switch {
	case v.Metadata != nil:
		s, err = chattemplate.FromGGUF(v.Metadata)
	case v.TokenizerConfig != nil:
		s, err = chattemplate.FromTokenizerConfig(v.TokenizerConfig)
	default:
		return nil, &inputError{path: v.From, err: errors.New("no tokenizer_config.json, so no chat template")}
	}
	if err != nil {
		return nil, &inputError{path: v.From, err: err}
	}
	return s, nil
}

func (a *app) tokenizeCommand() *cobra.Command {
	var noSpecial, decode, skipSpecial, isolate bool
	cmd := &cobra.Command{
		Use:   "tokenize CHECKPOINT TEXT",
		Short: "Encode text into token ids with a checkpoint's own tokenizer (or decode ids)",
		Long: `tokenize encodes TEXT ("-" reads standard input) with the tokenizer a
checkpoint carries: a Hugging Face directory's tokenizer.json and
tokenizer_config.json (the weights are not needed), a GGUF file's
tokenizer.ggml.* keys (only its header is read), an APR file's tokenizer.*
keys, or the tokenizer files another checkpoint carries in its metadata. The pre-tokenizer comes from
the tokenizer's own configuration; an unknown one is an error.

Special tokens the checkpoint adds around every input (BOS, EOS) are added
unless --no-special is given; special tokens written in the text
("<|eot_id|>") are always matched whole.

With --decode, TEXT is a list of ids ("128000 9906 1917" or a JSON array)
and the decoded text is printed; --skip-special leaves special tokens out.`,
		Example: `  sluice tokenize ./Llama-3-8B "Hello world"
  sluice tokenize model.gguf "Hello world" --no-special --json
  echo "some text" | sluice tokenize model.gguf -
  sluice tokenize model.gguf --decode "128000 9906 1917"`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				text = string(b)
			}
			h := a.inspectHost(isolate)
			defer h.Close()
			vs, err := loadVocab(cmd.Context(), h, args[0])
			if err != nil {
				return err
			}
			tok, err := vs.Tokenizer()
			if err != nil {
				return err
			}
			if decode {
				ids, err := tokenizer.ParseIDs(text)
				if err != nil {
					return configErr(fmt.Errorf("--decode: %w", err))
				}
				out := tok.Decode(ids, skipSpecial)
				if a.json {
					return writeJSON(a.stdout, map[string]any{"schema": tokenizeSchema, "ids": ids, "text": out})
				}
				fmt.Fprintln(a.stdout, out)
				return nil
			}
			ids := tok.Encode(text, !noSpecial)
			return a.printTokens(tok, vs, ids, !noSpecial)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noSpecial, "no-special", false, "do not add the special tokens (BOS/EOS) the checkpoint adds around every input")
	f.BoolVar(&decode, "decode", false, "decode TEXT, a list of token ids, instead")
	f.BoolVar(&skipSpecial, "skip-special", false, "with --decode, leave special tokens out")
	f.BoolVar(&isolate, "isolate", false, "run format plugins as their own processes instead of inside sluice")
	return cmd
}

// tokenizeReport is tokenize's --json output, schema sluice.tokenize/v1.
type tokenizeReport struct {
	Schema       string   `json:"schema"`
	From         string   `json:"from"`
	Model        string   `json:"model"`
	PreTokenizer string   `json:"pre_tokenizer"`
	VocabSize    int      `json:"vocab_size"`
	AddSpecial   bool     `json:"add_special"`
	Count        int      `json:"count"`
	IDs          []int32  `json:"ids"`
	Tokens       []string `json:"tokens"`
	Pieces       []string `json:"pieces"`
	Special      []bool   `json:"special"`
}

func (a *app) printTokens(tok *tokenizer.Tokenizer, vs *vocabSource, ids []int32, addSpecial bool) error {
	r := tokenizeReport{
		Schema: tokenizeSchema, From: vs.From, Model: string(tok.Model()), PreTokenizer: tok.PreTokenizer(),
		VocabSize: tok.VocabSize(), AddSpecial: addSpecial, Count: len(ids), IDs: nonNilIDs(ids),
		Tokens: tok.Tokens(ids), Pieces: make([]string, len(ids)), Special: make([]bool, len(ids)),
	}
	for i, id := range ids {
		r.Pieces[i] = tok.Decode([]int32{id}, false)
		r.Special[i] = tok.IsSpecial(id)
	}
	if a.json {
		return writeJSON(a.stdout, r)
	}
	idText := make([]string, len(ids))
	for i, id := range ids {
		idText[i] = strconv.Itoa(int(id))
	}
	if a.quiet {
		fmt.Fprintln(a.stdout, strings.Join(idText, " "))
		return nil
	}
	pre := r.PreTokenizer
	if pre == "" {
		pre = "unnamed"
	}
	fmt.Fprintf(a.stdout, "%d tokens (%s vocabulary of %d, pre-tokenizer %s, from %s)\n", r.Count, r.Model, r.VocabSize, pre, r.From)
	fmt.Fprintf(a.stdout, "ids: %s\n\n", strings.Join(idText, " "))
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tTOKEN\tTEXT\t")
	for i, id := range ids {
		kind := ""
		if r.Special[i] {
			kind = "special"
		}
		tok := r.Tokens[i]
		if strings.IndexFunc(tok, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
			tok = strconv.Quote(tok) // a token holding a line break or a tab would break the table
		}
		fmt.Fprintf(tw, "%d\t%s\t%q\t%s\n", id, tok, r.Pieces[i], kind)
	}
	return tw.Flush()
}

func nonNilIDs(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// aprVocabulary is the key under which aprender's APR metadata holds a
// vocabulary; its other tokenizer.* keys follow.
const aprVocabulary = "tokenizer.vocabulary"

// aprTokenizerKeys maps aprender's tokenizer keys to the GGUF keys they
// were made from (the APR plugin writes tokenizer.vocabulary from
// tokenizer.ggml.tokens, and so on).
var aprTokenizerKeys = [][2]string{
	{aprVocabulary, tokenizer.KeyTokens},
	{"tokenizer.model", tokenizer.KeyModel},
	{"tokenizer.pre_type", tokenizer.KeyPre},
	{"tokenizer.merges", tokenizer.KeyMerges},
	{"tokenizer.scores", tokenizer.KeyScores},
	{"tokenizer.token_type", tokenizer.KeyTokenType},
	{"tokenizer.bos_token_id", tokenizer.KeyBOSID},
	{"tokenizer.eos_token_id", tokenizer.KeyEOSID},
	{"tokenizer.padding_token_id", tokenizer.KeyPaddingID},
	{"tokenizer.add_bos_token", tokenizer.KeyAddBOS},
	{tokenizer.KeyAddEOS, tokenizer.KeyAddEOS},
	{tokenizer.KeyAddSpacePrefix, tokenizer.KeyAddSpacePrefix},
	{tokenizer.KeyChatTemplate, tokenizer.KeyChatTemplate},
}

// ggufKeysFromAPR returns the GGUF tokenizer keys an APR file's metadata
// stands for.
func ggufKeysFromAPR(md *tensor.Metadata) *tensor.Metadata {
	out := &tensor.Metadata{}
	for _, kv := range aprTokenizerKeys {
		if v, ok := md.Get(kv[0]); ok {
			out.Set(kv[1], v)
		}
	}
	return out
}
