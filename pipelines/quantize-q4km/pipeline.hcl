# Quantize a Hugging Face checkpoint the way `llama-quantize … Q4_K_M` does,
# and write it as GGUF for llama.cpp.
#
#   go run ./cmd/sluice plan pipelines/quantize-q4km   # every tensor's type, and why
#   go run ./cmd/sluice run pipelines/quantize-q4km
#
# The preset gives each tensor llama.cpp's type: q4_K by default, q6_K for
# the output and for attn_v/ffn_down in llama.cpp's "use_more_bits" layers.
# The shipped sample has rows of 64, which fit no K-quant block (256), so
# llama.cpp's fallbacks apply (q4_K → q5_0, q6_K → q8_0); a real model
# gets the K-quants. Outputs go to out/quantize-q4km/.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/quantize-q4km"
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

transform "quantize" "q4km" {
  input  = source.hf
  preset = "Q4_K_M"

  # llama.cpp's converter keeps norms in f32; the preset leaves 1-D tensors
  # alone, so say it here.
  rule {
    max_dims = 1
    type     = "f32"
  }
}

sink "gguf" "llama" {
  input        = transform.q4km
  path         = "${var.out_dir}/model-Q4_K_M.gguf"
  architecture = "auto"
}
