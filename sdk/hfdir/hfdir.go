// Package hfdir carries what a Hugging Face checkpoint directory holds beside
// its weights: the JSON side files config.json, generation_config.json,
// tokenizer.json, tokenizer_config.json and special_tokens_map.json (the keys
// of tensor.HFFiles). A source reading such a directory puts them into its
// manifest's metadata, verbatim, so sinks can derive hyperparameters, the
// tokenizer and the chat template without reading files themselves.
package hfdir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// MaxFileBytes caps the size of one side file or index.
const MaxFileBytes = 256 << 20

// Carry sets, for each side file present in dir, in file-name order, the
// metadata key tensor.HFFiles gives it to the file's text. Absent files are
// skipped. A present file must stay inside dir once symbolic links are
// resolved (links into the Hugging Face cache repository are fine; see
// sdk/localpath), be readable, hold at most MaxFileBytes and be valid JSON;
// otherwise Carry returns a bad-input error naming the file.
func Carry(md *tensor.Metadata, dir string) error {
	names := make([]string, 0, len(tensor.HFFiles))
	for n := range tensor.HFFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := localpath.Inside(dir, p); err != nil {
			return &plugin.InputError{File: p, Msg: err.Error()}
		}
		b, err := ReadFile(p)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return &binio.FormatError{File: p, Offset: -1, Msg: "not valid JSON"}
		}
		md.Set(tensor.HFFiles[n], tensor.StringValue(string(b)))
	}
	return nil
}

// ReadFile reads a JSON file of a Hugging Face directory (a side file, a
// shard index) of at most MaxFileBytes. It returns a bad-input error naming
// the file when it cannot be opened or read, or is larger.
func ReadFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot open", Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot read", Err: err}
	}
	if len(b) > MaxFileBytes {
		return nil, &binio.FormatError{File: p, Offset: MaxFileBytes, Msg: fmt.Sprintf("file is larger than the %d-byte limit", MaxFileBytes)}
	}
	return b, nil
}
