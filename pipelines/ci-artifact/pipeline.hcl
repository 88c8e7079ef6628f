# CI artifact: build a release from a Hugging Face checkpoint — a Q8_0 GGUF
# for llama.cpp and an f16 safetensors shard set — and sign every file it
# writes. Each output NAME gets a detached signature NAME.sig (HMAC-SHA256
# over the file's SHA-256 and size), and each sink a run manifest
# (NAME.sluice-run.json: the pipeline's digest, the variables with the key
# redacted, every input's and output's SHA-256, the plugins' digests).
#
#   sluice validate pipelines/ci-artifact
#   SLUICE_VAR_signing_key="$KEY" sluice run pipelines/ci-artifact -var out_dir=dist
#   sluice verify dist/sample-q8_0.gguf --key "$KEY"
#   sluice verify dist/safetensors --key "$KEY"
#
# docs/operations.md has the GitHub Actions workflow that runs these steps
# and uploads dist/. The default key is for the example only: CI passes its
# secret through SLUICE_VAR_signing_key, which never appears in a plan, a
# log, an error or a run manifest.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "dist"
}

variable "signing_key" {
  type        = string
  sensitive   = true
  default     = "example-only-signing-key"
  description = "Shared secret for the HMAC-SHA256 signatures; set SLUICE_VAR_signing_key from a CI secret."
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

transform "quantize" "q8_0" {
  input  = source.hf
  preset = "Q8_0"
  rule {
    max_dims = 1
    type     = "f32"
  }
}

transform "sign" "gguf" {
  input = transform.q8_0
  key   = var.signing_key
}

sink "gguf" "llama" {
  input        = transform.gguf
  path         = "${var.out_dir}/sample-q8_0.gguf"
  architecture = "auto"
}

transform "shard" "release" {
  input    = source.hf
  max_size = "100KB"
}

transform "sign" "safetensors" {
  input = transform.release
  key   = var.signing_key
}

sink "safetensors" "release" {
  input = transform.safetensors
  path  = "${var.out_dir}/safetensors/model.safetensors"
  dtype = "f16"
}
