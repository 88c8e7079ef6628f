# Nightly re-quantization: an f16 GGUF (published upstream, or built by the
# prepare/ pipeline from the shipped sample) becomes Q4_K_M and Q8_0 GGUFs,
# quantized as `llama-quantize` quantizes them. One read of the f16 file
# feeds both quantizations.
#
#   go run ./cmd/sluice run pipelines/nightly-requant/prepare -var out_dir=out/nightly
#   go run ./cmd/sluice run pipelines/nightly-requant -var out_dir=out/nightly --skip-unchanged
#   go run ./cmd/sluice diff out/nightly/input/sample-f16.gguf out/nightly/sample-Q8_0.gguf --min-cosine 0.999
#   go run ./cmd/sluice diff out/nightly/input/sample-f16.gguf out/nightly/sample-Q4_K_M.gguf --min-cosine 0.99
#
# Run it from cron or a systemd timer as often as you like: with
# --skip-unchanged it does nothing (and says so) while the f16 file, this
# pipeline, its variables, sluice and the plugins are those the run manifests
# beside the outputs record. The `sluice diff` gates fail the job (exit 4)
# when quantization drifts past the thresholds; see docs/operations.md for the
# crontab, systemd timer and CI versions of this job.

variable "model" {
  type        = string
  default     = ""
  description = "The f16 (or bf16/f32) GGUF to re-quantize. Empty means OUT_DIR/input/sample-f16.gguf, written by prepare/."
}

variable "name" {
  type        = string
  default     = "sample"
  description = "Stem of the output file names: NAME-Q4_K_M.gguf, NAME-Q8_0.gguf."
}

variable "out_dir" {
  type    = string
  default = "out/nightly-requant"
}

locals {
  model = var.model != "" ? var.model : "${var.out_dir}/input/sample-f16.gguf"
}

source "gguf" "f16" {
  path = local.model
}

# llama.cpp's Q4_K_M: q4_K by default, q6_K for the output tensor and for
# attn_v/ffn_down in its "use_more_bits" layers, with llama.cpp's fallbacks
# for rows that fit no K-quant block. Norms and other 1-D tensors stay f32.
transform "quantize" "q4_k_m" {
  input  = source.f16
  preset = "Q4_K_M"
  rule {
    max_dims = 1
    type     = "f32"
  }
}

sink "gguf" "q4_k_m" {
  input = transform.q4_k_m
  path  = "${var.out_dir}/${var.name}-Q4_K_M.gguf"
}

transform "quantize" "q8_0" {
  input  = source.f16
  preset = "Q8_0"
  rule {
    max_dims = 1
    type     = "f32"
  }
}

sink "gguf" "q8_0" {
  input = transform.q8_0
  path  = "${var.out_dir}/${var.name}-Q8_0.gguf"
}
