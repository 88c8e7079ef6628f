# Reshape a Hugging Face llama checkpoint into llama.cpp's layout without
# changing format: drop rotary buffers, apply llama.cpp's Q/K rotary
# permutation, rename to GGUF names, cast to f16 and stamp metadata; the
# result is written as safetensors. A second branch undoes the permutation
# and the renaming, which gives back the original bytes.
#
#   go run ./cmd/sluice plan pipelines/llama-layout
#   go run ./cmd/sluice run pipelines/llama-layout
#
# Outputs go to out/llama-layout/.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face llama checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/llama-layout"
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

transform "filter" "weights" {
  input = source.hf
  exclude { match = ["*.rotary_emb.inv_freq"] }
}

# Head counts come from config.json (num_attention_heads, num_key_value_heads).
transform "permute" "rope" {
  input = transform.weights
}

transform "rename" "gguf_names" {
  input = transform.rope
  map   = "hf-llama-to-gguf"
}

transform "cast" "f16" {
  input = transform.gguf_names
  type  = "f16"
}

transform "metadata" "stamp" {
  input = transform.f16
  set {
    key   = "general.name"
    value = "sample (llama.cpp layout)"
  }
}

sink "safetensors" "llama_cpp_layout" {
  input = transform.stamp
  path  = "${var.out_dir}/llama-cpp/model.safetensors"
}

# Back again: GGUF names to Hugging Face names, then the inverse permutation.
transform "rename" "hf_names" {
  input = transform.gguf_names
  map   = "gguf-to-hf-llama"
}

transform "permute" "unrope" {
  input   = transform.hf_names
  inverse = true
}

sink "safetensors" "roundtrip" {
  input = transform.unrope
  path  = "${var.out_dir}/roundtrip/model.safetensors"
}
