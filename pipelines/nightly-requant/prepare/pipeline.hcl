# Stand-in for the upstream f16 GGUF that pipelines/nightly-requant
# re-quantizes every night: the shipped sample (a tiny llama-shaped Hugging
# Face checkpoint) converted to an f16 GGUF the way llama.cpp's converter
# writes it.
#
#   go run ./cmd/sluice run pipelines/nightly-requant/prepare -var out_dir=out/nightly
#   go run ./cmd/sluice run pipelines/nightly-requant -var out_dir=out/nightly
#
# The test suite runs this first, with the same out_dir, then the nightly
# pipeline.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/nightly-requant"
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

sink "gguf" "f16" {
  input        = source.hf
  path         = "${var.out_dir}/input/sample-f16.gguf"
  architecture = "auto"
  dtype        = "f16"
}
