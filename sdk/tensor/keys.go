package tensor

// Metadata keys with a meaning shared between components. A source reading a
// Hugging Face directory carries the directory's JSON files under these keys,
// verbatim, so sinks can derive what they need (GGUF hyperparameters and
// tokenizer, APR metadata) without reading files themselves.
const (
	MetaHFConfig           = "hf.config.json"
	MetaHFGenerationConfig = "hf.generation_config.json"
	MetaHFTokenizer        = "hf.tokenizer.json"
	MetaHFTokenizerConfig  = "hf.tokenizer_config.json"
	MetaHFSpecialTokensMap = "hf.special_tokens_map.json"
	// MetaHFModelName is the checkpoint's name as its directory gives it:
	// the directory's base name, or NAME for a snapshot in the Hugging Face
	// cache (models--ORG--NAME/snapshots/REVISION). Sinks use it where a
	// name is wanted and config.json has no _name_or_path, as llama.cpp's
	// converter falls back to the directory's name.
	MetaHFModelName = "hf.model_name"
	// MetaHFPrefix starts every key above; sinks that write plain key/value
	// metadata (safetensors __metadata__) leave these keys out.
	MetaHFPrefix = "hf."
)

// HFFiles maps each carried Hugging Face file name to its metadata key.
var HFFiles = map[string]string{
	"config.json":             MetaHFConfig,
	"generation_config.json":  MetaHFGenerationConfig,
	"tokenizer.json":          MetaHFTokenizer,
	"tokenizer_config.json":   MetaHFTokenizerConfig,
	"special_tokens_map.json": MetaHFSpecialTokensMap,
}
