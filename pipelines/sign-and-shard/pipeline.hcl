# Cast a checkpoint to f16, split it into shards of at most 64 KiB and sign
# every file: safetensors cannot hold a signature, so each output NAME gets a
# detached signature NAME.sig (HMAC-SHA256 over the file's SHA-256 and size;
# see docs/transforms.md).
#
#   go run ./cmd/sluice run pipelines/sign-and-shard -var signing_key=…
#   SLUICE_VAR_signing_key=… go run ./cmd/sluice run pipelines/sign-and-shard
#
# The default key below is for the example only; pass your own. The key is
# sensitive: it never appears in plans, logs or errors.
#
# Outputs go to out/sign-and-shard/.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/sign-and-shard"
}

variable "signing_key" {
  type        = string
  sensitive   = true
  default     = "example-only-signing-key"
  description = "Shared secret for the HMAC-SHA256 signatures."
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

transform "cast" "f16" {
  input = source.hf
  type  = "f16"
}

transform "shard" "small" {
  input    = transform.f16
  max_size = "64KiB"
}

transform "sign" "release" {
  input = transform.small
  key   = var.signing_key
}

sink "safetensors" "release" {
  input = transform.release
  path  = "${var.out_dir}/model.safetensors"
}
