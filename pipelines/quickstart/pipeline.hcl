# Quick start: convert the shipped sample checkpoint (a tiny llama-shaped
# Hugging Face directory) into a GGUF file for llama.cpp and a re-sharded
# safetensors checkpoint.
#
#   go run ./cmd/sluice run pipelines/quickstart
#   go run ./cmd/sluice plan pipelines/quickstart
#
# Outputs go to out/quickstart/ under the current directory.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/quickstart"
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

# One GGUF file with llama.cpp's names, hyperparameters and tokenizer,
# quantized to q8_0 (norms and other 1-D tensors stay f32).
sink "gguf" "llama" {
  input        = source.hf
  path         = "${var.out_dir}/sample-q8_0.gguf"
  architecture = "auto"
  dtype        = "q8_0"
}

# The same weights as f16 safetensors, in shards of at most 128 KB.
transform "shard" "small" {
  input    = source.hf
  max_size = "128KB"
}

sink "safetensors" "resharded" {
  input = transform.small
  path  = "${var.out_dir}/model.safetensors"
  dtype = "f16"
}
